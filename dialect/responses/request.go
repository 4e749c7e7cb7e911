package responses

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/openai"
)

// DecodeRequest reads a Responses create request; one that repeats a
// member anywhere is refused. Members the neutral
// model cannot carry are listed in Request.Unsupported (a built-in tool
// as "tools.<type>"); those that change nothing in the answer but cannot
// be kept (store, prompt_cache_key, metadata) in Request.Dropped. The
// stateful members (previous_response_id, background, conversation,
// prompt) are the gateway's to refuse, and are not read here.
func (Codec) DecodeRequest(body []byte) (*dialect.Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("the body is not a JSON object")
	}
	if p := repeated(root, ""); p != "" {
		return nil, fmt.Errorf("%s: the member is repeated", p)
	}
	// Streams always end with the usage.
	r := &dialect.Request{StreamUsage: true}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		err = decodeMember(r, k.Str, v)
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// decodeMember reads one top-level member of a request.
func decodeMember(r *dialect.Request, k string, v gjson.Result) error {
	if v.Type == gjson.Null {
		return nil
	}
	switch k {
	case "model":
		r.Model = v.Str
	case "instructions":
		if v.Type != gjson.String {
			return errors.New("instructions: must be a string")
		}
		if v.Str != "" {
			r.System = append(r.System, dialect.Block{Kind: dialect.BlockText, Text: v.Str})
		}
	case "input":
		return decodeInput(r, v)
	case "tools":
		return decodeTools(r, v)
	case "tool_choice":
		return decodeToolChoice(r, v)
	case "parallel_tool_calls":
		if v.Type == gjson.False {
			if r.ToolChoice == nil {
				r.ToolChoice = &dialect.ToolChoice{Mode: dialect.ToolAuto}
			}
			r.ToolChoice.NoParallel = true
		}
	case "max_output_tokens":
		if v.Type == gjson.Number {
			r.MaxTokens = v.Int()
		}
	case "temperature":
		r.Temperature = float(v)
	case "top_p":
		r.TopP = float(v)
	case "stream":
		r.Stream = v.Bool()
	case "text":
		return decodeText(r, v)
	case "reasoning":
		switch e := v.Get("effort").Str; e {
		case "":
		case "none":
			r.Reasoning = &dialect.Reasoning{Disabled: true}
		default:
			r.Reasoning = &dialect.Reasoning{Effort: e}
		}
	case "user", "safety_identifier":
		if r.User == "" {
			r.User = v.Str
		}
	case "store":
		// Nothing is stored for a translated response: it cannot be
		// retrieved later, which the answer's "store": false says too.
		if v.Bool() {
			r.Drop(k)
		}
	case "metadata":
		if len(v.Map()) > 0 {
			r.Drop(k)
		}
	case "prompt_cache_key", "prompt_cache_retention":
		r.Drop(k)
	case "include":
		v.ForEach(func(_, s gjson.Result) bool {
			if s.Str != "reasoning.encrypted_content" {
				r.Unsupport("include")
			}
			return true
		})
	case "service_tier":
		if v.Str != "auto" && v.Str != "default" {
			r.Unsupport(k)
		}
	case "truncation":
		if v.Str != "disabled" {
			r.Unsupport(k)
		}
	case "top_logprobs":
		if v.Int() != 0 {
			r.Unsupport(k)
		}
	case "stream_options":
		// include_obfuscation: no obfuscation is added.
	case "previous_response_id", "background", "conversation", "prompt":
		// The gateway's: refused on a translated route before decoding.
	default:
		r.Unsupport(k)
	}
	return nil
}

// float is a number's value, nil if it is not a number.
func float(v gjson.Result) *float64 {
	if v.Type != gjson.Number {
		return nil
	}
	f := v.Float()
	return &f
}

// decodeText reads text: its format (json_object, json_schema) and
// verbosity.
func decodeText(r *dialect.Request, v gjson.Result) error {
	f := v.Get("format")
	switch t := f.Get("type").Str; t {
	case "", "text":
	case "json_object":
		r.ResponseFormat = &dialect.ResponseFormat{Type: t}
	case "json_schema":
		schema := f.Get("schema")
		if !schema.IsObject() {
			return errors.New("text.format.schema: a json_schema format needs a schema object")
		}
		r.ResponseFormat = &dialect.ResponseFormat{Type: t, Name: f.Get("name").Str,
			Schema: json.RawMessage(schema.Raw), Strict: f.Get("strict").Bool()}
	default:
		return fmt.Errorf("text.format.type: %q is not supported", t)
	}
	if vb := v.Get("verbosity"); vb.Exists() && vb.Type != gjson.Null && vb.Str != "medium" {
		r.Unsupport("text.verbosity")
	}
	return nil
}

// decodeInput reads input: a string (one user message) or a list of
// items. Messages of the system and developer roles become the system
// prompt; function calls and reasoning items are blocks of an assistant
// message, function call outputs tool results of a user message, each
// matched by its call_id to a function call before it.
func decodeInput(r *dialect.Request, v gjson.Result) error {
	if v.Type == gjson.String {
		appendMessage(r, dialect.RoleUser, dialect.Block{Kind: dialect.BlockText, Text: v.Str})
		return nil
	}
	if !v.IsArray() {
		return errors.New("input: must be a string or an array of items")
	}
	calls := make(map[string]bool)
	var err error
	i := -1
	v.ForEach(func(_, it gjson.Result) bool {
		i++
		err = decodeItem(r, it, i, calls)
		return err == nil
	})
	return err
}

// decodeItem reads input item i.
func decodeItem(r *dialect.Request, it gjson.Result, i int, calls map[string]bool) error {
	if !it.IsObject() {
		return fmt.Errorf("input[%d]: must be an object", i)
	}
	switch typ := it.Get("type").Str; typ {
	case "message", "":
		return decodeMessage(r, it, i)
	case "function_call":
		id, name := it.Get("call_id").Str, it.Get("name").Str
		if id == "" || name == "" {
			return fmt.Errorf("input[%d]: a function_call needs a call_id and a name", i)
		}
		args := it.Get("arguments").Str
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
			return fmt.Errorf("input[%d].arguments: not a JSON object", i)
		}
		calls[id] = true
		appendMessage(r, dialect.RoleAssistant, dialect.Block{Kind: dialect.BlockToolUse, ToolID: id, ToolName: name, Input: json.RawMessage(args)})
	case "function_call_output":
		id := it.Get("call_id").Str
		if !calls[id] {
			return fmt.Errorf("input[%d].call_id: no function_call item with call_id %q comes before this output", i, id)
		}
		content, err := outputContent(it.Get("output"), i)
		if err != nil {
			return err
		}
		appendMessage(r, dialect.RoleUser, dialect.Block{Kind: dialect.BlockToolResult, ToolID: id, Content: content})
	case "reasoning":
		appendMessage(r, dialect.RoleAssistant, reasoningBlock(it))
	case "item_reference":
		return fmt.Errorf("input[%d]: an item_reference names a stored item, which this model's provider does not hold", i)
	default:
		return fmt.Errorf("input[%d]: items of type %q cannot be translated for this model's provider", i, typ)
	}
	return nil
}

// reasoningBlock reads a reasoning item: the text is its reasoning_text
// content, else its summary, and the encrypted_content its signature (or,
// after RedactedPrefix, the data of redacted thinking).
func reasoningBlock(it gjson.Result) dialect.Block {
	enc := it.Get("encrypted_content").Str
	if data, ok := strings.CutPrefix(enc, RedactedPrefix); ok {
		return dialect.Block{Kind: dialect.BlockRedactedThinking, Data: data}
	}
	var text strings.Builder
	collect := func(parts gjson.Result, typ string) {
		parts.ForEach(func(_, p gjson.Result) bool {
			if p.Get("type").Str == typ {
				text.WriteString(p.Get("text").Str)
			}
			return true
		})
	}
	if c := it.Get("content"); c.IsArray() && len(c.Array()) > 0 {
		collect(c, "reasoning_text")
	} else {
		collect(it.Get("summary"), "summary_text")
	}
	return dialect.Block{Kind: dialect.BlockThinking, Text: text.String(), Signature: enc}
}

// decodeMessage reads a message item (or an easy input message).
func decodeMessage(r *dialect.Request, it gjson.Result, i int) error {
	role := it.Get("role").Str
	c := it.Get("content")
	switch role {
	case "system", "developer":
		blocks, err := contentBlocks(c, i, false)
		if err != nil {
			return err
		}
		for _, b := range blocks {
			if b.Kind != dialect.BlockText {
				return fmt.Errorf("input[%d].content: a %s message holds only text", i, role)
			}
		}
		r.System = append(r.System, blocks...)
	case "user":
		blocks, err := contentBlocks(c, i, false)
		if err != nil {
			return err
		}
		appendMessage(r, dialect.RoleUser, blocks...)
	case "assistant":
		blocks, err := contentBlocks(c, i, true)
		if err != nil {
			return err
		}
		appendMessage(r, dialect.RoleAssistant, blocks...)
	default:
		return fmt.Errorf("input[%d].role: %q is not supported", i, role)
	}
	return nil
}

// contentBlocks reads a message's content: a string, or a list of
// input_text, input_image and (of an assistant) output_text and refusal
// parts.
func contentBlocks(c gjson.Result, i int, assistant bool) ([]dialect.Block, error) {
	if c.Type == gjson.String {
		return []dialect.Block{{Kind: dialect.BlockText, Text: c.Str}}, nil
	}
	if !c.IsArray() {
		return nil, fmt.Errorf("input[%d].content: must be a string or an array of parts", i)
	}
	var out []dialect.Block
	var err error
	c.ForEach(func(_, p gjson.Result) bool {
		switch t := p.Get("type").Str; {
		case t == "input_text" || (assistant && t == "output_text"):
			out = append(out, dialect.Block{Kind: dialect.BlockText, Text: p.Get("text").Str})
		case assistant && t == "refusal":
			out = append(out, dialect.Block{Kind: dialect.BlockText, Text: p.Get("refusal").Str})
		case t == "input_image" && !assistant:
			u := p.Get("image_url").Str
			if u == "" {
				err = fmt.Errorf("input[%d].content: an input_image by file_id cannot be translated for this model's provider: send its image_url", i)
				return false
			}
			out = append(out, dialect.Block{Kind: dialect.BlockImage, Image: openai.ParseImageURL(u)})
		default:
			err = fmt.Errorf("input[%d].content: parts of type %q cannot be translated for this model's provider", i, t)
		}
		return err == nil
	})
	return out, err
}

// outputContent reads a function_call_output's output: a string, or a
// list of input_text and input_image parts.
func outputContent(o gjson.Result, i int) ([]dialect.Block, error) {
	if o.Type == gjson.String {
		return []dialect.Block{{Kind: dialect.BlockText, Text: o.Str}}, nil
	}
	if !o.IsArray() {
		return nil, fmt.Errorf("input[%d].output: must be a string or an array of parts", i)
	}
	return contentBlocks(o, i, false)
}

// appendMessage appends blocks to the last message if it has role, else
// as a new message: a turn's items (reasoning, text, calls) form one
// assistant message, and consecutive call outputs one user message.
func appendMessage(r *dialect.Request, role dialect.Role, blocks ...dialect.Block) {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
		r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
		return
	}
	r.Messages = append(r.Messages, dialect.Message{Role: role, Content: blocks})
}
