// Package responses is the client dialect of OpenAI's Responses protocol
// (POST /v1/responses), for the clients that speak only it (Codex CLI,
// OpenAI-SDK applications using client.responses): it reads a create
// request into the neutral model and writes the neutral answer, stream
// and errors as a Response object, its SSE events and OpenAI's error
// shape, so that such a client reaches a model whose provider speaks
// another protocol (Messages, Chat Completions).
//
// It is a client codec only: a provider that speaks Responses is reached
// without translation. The stateful features of Responses (stored
// responses, previous_response_id, background, conversations, stored
// prompts) belong to the provider that stores them; the gateway refuses
// them on a translated route (see caddymodule), and the codec leaves
// them to it.
//
// Reasoning round-trips as reasoning items: a thinking block's text is
// the item's summary text and its signature the item's encrypted_content,
// verbatim; a redacted thinking block is an item without summary whose
// encrypted_content is RedactedPrefix followed by the block's data. A
// client that sends the items back (Codex CLI does, with include
// reasoning.encrypted_content and store false) sends the provider its own
// signed thinking again.
package responses

import (
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
)

// Path is the request path of the protocol below a base URL.
const Path = "/responses"

// RedactedPrefix starts the encrypted_content of a reasoning item that
// carries a redacted thinking block. Signatures are base64, which has no
// colon, so the two cannot be confused.
const RedactedPrefix = "redacted_thinking:"

// Codec converts between the neutral model and Responses, as a client
// protocol. Its zero value is ready to use.
type Codec struct{}

// statusOf is a Response object's status, and its incomplete_details
// reason, for a stop reason.
func statusOf(r dialect.StopReason) (status, reason string) {
	switch r {
	case dialect.StopMaxTokens:
		return "incomplete", "max_output_tokens"
	case dialect.StopRefusal:
		return "incomplete", "content_filter"
	default:
		return "completed", ""
	}
}

// idBase is the part of a provider's answer id that names the Response
// and its items: what follows the provider's own prefix (msg_, chatcmpl-).
func idBase(id string) string {
	if i := strings.IndexAny(id, "_-"); i >= 0 && i < len(id)-1 {
		return id[i+1:]
	}
	if id == "" {
		return "0"
	}
	return id
}

// Interface guard.
var _ dialect.ClientCodec = Codec{}

// ClientParam names, in Responses terms, a parameter that a provider
// codec records as unsupported or dropped under its Chat Completions or
// Messages name, so that the 400's param and X-Air-Dropped-Params name
// what the client sent.
func (Codec) ClientParam(param string) string {
	switch param {
	case "response_format":
		return "text.format"
	case "reasoning_effort":
		return "reasoning.effort"
	case "reasoning_content", "thinking":
		return "reasoning"
	case "tool_result.content.image":
		return "function_call_output.output.input_image"
	}
	return param
}
