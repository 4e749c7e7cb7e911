// Package dialect is the gateway's neutral model of a chat exchange, the
// seam between the wire protocols it speaks with clients (Chat
// Completions, Anthropic Messages, Responses) and with providers (OpenAI,
// Anthropic, Gemini, Vertex AI, Bedrock, Azure, DashScope).
//
// Each wire protocol has one package under dialect/ that converts its
// requests, answers, stream events, usage and errors to and from this
// model. A request whose client protocol is the provider's does not pass
// through the model at all: it is forwarded byte for byte. Only a
// translated exchange is decoded into the model and encoded again, as
// envoy ai-gateway's translator does, one direction at a time.
//
// The model follows Anthropic Messages, the richest of the protocols:
// content is a list of typed blocks, tool results are blocks of a user
// message, reasoning is a block with its signature, and a stream is a
// sequence of block starts, deltas and stops between a start and a stop
// of the message.
package dialect

import (
	"encoding/json"
)

// Role is who wrote a message.
type Role string

// Roles of a message. Tool results are blocks of a user message; system
// prompts are Request.System, not messages.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockKind is what a content block holds.
type BlockKind uint8

// Kinds of content blocks.
const (
	// BlockText is text: Block.Text.
	BlockText BlockKind = iota + 1
	// BlockImage is an image: Block.Image.
	BlockImage
	// BlockToolUse is a call of a tool by the model: Block.ToolID,
	// Block.ToolName and Block.Input.
	BlockToolUse
	// BlockToolResult is the result of a call, in a user message:
	// Block.ToolID (the call's id), Block.Content and Block.IsError.
	BlockToolResult
	// BlockThinking is the model's visible reasoning: Block.Text and the
	// provider's Block.Signature, which must be sent back unchanged with
	// it on the next turn.
	BlockThinking
	// BlockRedactedThinking is reasoning the provider encrypted:
	// Block.Data, sent back unchanged.
	BlockRedactedThinking
)

// Block is one piece of a message's content.
type Block struct {
	// Kind says which of the other fields are set.
	Kind BlockKind
	// Text is the text of a text or thinking block.
	Text string
	// Signature is the provider's signature of a thinking block
	// (Anthropic's signature, Gemini's thoughtSignature; on Gemini it may
	// also sign a tool use).
	Signature string
	// Data is the opaque content of a redacted thinking block.
	Data string
	// Image is the image of an image block.
	Image *Image
	// ToolID is the id of a tool use, or of the use a result answers.
	// It is kept as the provider or client wrote it, never regenerated
	// (Gemini has none: its codec makes them from the call's position).
	ToolID string
	// ToolName is the name of the tool a tool use calls (and, where known,
	// of the call a result answers: Gemini matches results by name).
	ToolName string
	// Input is a tool use's arguments, a JSON object.
	Input json.RawMessage
	// Content is a tool result's content: text and image blocks.
	Content []Block
	// IsError marks a tool result that reports a failure.
	IsError bool
	// CacheControl is the client's cache breakpoint on this block
	// (Anthropic's cache_control object as sent), nil if none.
	CacheControl json.RawMessage
}

// Image is an image given to a model: base64 Data with its MediaType, or
// a URL that the provider fetches (or that the gateway fetches, under its
// media download policy, for a provider that takes no URLs).
type Image struct {
	// MediaType is the image's MIME type, such as image/png.
	MediaType string
	// Data is the image's bytes in standard base64.
	Data string
	// URL is where the image is, when Data is empty.
	URL string
}

// Message is one turn of the conversation.
type Message struct {
	// Role is who wrote it.
	Role Role
	// Content is its blocks, in order.
	Content []Block
}

// Tool is a tool the model may call.
type Tool struct {
	// Name is the tool's name.
	Name string
	// Description says what it does.
	Description string
	// Schema is the JSON Schema of its input, an object.
	Schema json.RawMessage
	// CacheControl is a cache breakpoint on the tool, nil if none.
	CacheControl json.RawMessage
}

// ToolChoiceMode is how the model must use tools.
type ToolChoiceMode string

// Modes of tool choice.
const (
	// ToolAuto lets the model decide.
	ToolAuto ToolChoiceMode = "auto"
	// ToolNone forbids calls.
	ToolNone ToolChoiceMode = "none"
	// ToolAny requires at least one call (OpenAI's "required").
	ToolAny ToolChoiceMode = "any"
	// ToolNamed requires a call of ToolChoice.Name.
	ToolNamed ToolChoiceMode = "tool"
)

// ToolChoice constrains the model's tool calls.
type ToolChoice struct {
	// Mode is how tools must be used.
	Mode ToolChoiceMode
	// Name is the tool that must be called, with ToolNamed.
	Name string
	// NoParallel forbids more than one call in a turn.
	NoParallel bool
}

// ResponseFormat asks for JSON output.
type ResponseFormat struct {
	// Type is "json_object" (any JSON) or "json_schema".
	Type string
	// Name is the schema's name, with json_schema.
	Name string
	// Schema is the JSON Schema the output must match, with json_schema.
	Schema json.RawMessage
	// Strict asks the provider to enforce Schema exactly.
	Strict bool
}

// Reasoning configures the model's reasoning.
type Reasoning struct {
	// BudgetTokens is the most tokens it may spend on reasoning (Anthropic
	// thinking.budget_tokens, Gemini thinkingBudget); zero if unset.
	BudgetTokens int64
	// Effort is "minimal", "low", "medium" or "high" (OpenAI
	// reasoning_effort), empty if unset.
	Effort string
	// Disabled turns reasoning off where the model allows it.
	Disabled bool
}

// Request is a chat request in the neutral model.
type Request struct {
	// Model is the model the client asked for.
	Model string
	// System is the system prompt: text blocks, which may carry cache
	// breakpoints.
	System []Block
	// Messages is the conversation, oldest first.
	Messages []Message
	// Tools are the tools the model may call.
	Tools []Tool
	// ToolChoice constrains calls; nil is the provider's default.
	ToolChoice *ToolChoice
	// MaxTokens bounds the output, reasoning included; zero if the client
	// set none (a codec whose provider requires one sets the model's
	// configured ceiling).
	MaxTokens int64
	// Temperature, TopP and TopK are sampling parameters, nil if unset.
	Temperature, TopP *float64
	TopK              *int64
	// Stop are the stop sequences.
	Stop []string
	// Stream asks for the answer as a stream of events.
	Stream bool
	// StreamUsage asks for the usage at the end of a stream (OpenAI's
	// stream_options.include_usage; Anthropic streams always carry it).
	StreamUsage bool
	// ResponseFormat asks for JSON output, nil if unset.
	ResponseFormat *ResponseFormat
	// Reasoning configures reasoning, nil if unset.
	Reasoning *Reasoning
	// User is the client's end-user id, if it sent one.
	User string
	// Unsupported names the parameters of the client's request that the
	// model cannot express, in the order found. The gateway answers 400
	// naming the first, unless the route drops them (drop_params), in
	// which case they are listed in a response header. Both the client's
	// codec (what the neutral model cannot carry) and the provider's (what
	// its protocol cannot express) add to it.
	Unsupported []string
	// Dropped names what a provider codec left out without changing the
	// answer's meaning (the cache breakpoints of a provider that caches by
	// itself, reasoning history a provider takes no input for). It is
	// listed in a response header but refuses nothing.
	Dropped []string
}

// Unsupport records that the target cannot honour param, once.
func (r *Request) Unsupport(param string) {
	for _, p := range r.Unsupported {
		if p == param {
			return
		}
	}
	r.Unsupported = append(r.Unsupported, param)
}

// Drop records that param was left out, once.
func (r *Request) Drop(param string) {
	for _, p := range r.Dropped {
		if p == param {
			return
		}
	}
	r.Dropped = append(r.Dropped, param)
}
