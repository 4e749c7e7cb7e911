package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// DecodeRequest reads a chat completion request. Members the neutral
// model cannot carry are listed in Request.Unsupported.
func (Codec) DecodeRequest(body []byte) (*dialect.Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("the body is not a JSON object")
	}
	r := &dialect.Request{}
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
	switch k {
	case "model":
		r.Model = v.Str
	case "messages":
		return decodeMessages(r, v)
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
	case "max_tokens", "max_completion_tokens":
		if v.Type == gjson.Number {
			r.MaxTokens = v.Int()
		}
	case "temperature":
		r.Temperature = float(v)
	case "top_p":
		r.TopP = float(v)
	case "top_k":
		if v.Type == gjson.Number {
			n := v.Int()
			r.TopK = &n
		}
	case "stop":
		if v.Type == gjson.String {
			r.Stop = []string{v.Str}
		} else {
			v.ForEach(func(_, s gjson.Result) bool { r.Stop = append(r.Stop, s.Str); return true })
		}
	case "stream":
		r.Stream = v.Bool()
	case "stream_options":
		r.StreamUsage = v.Get("include_usage").Bool()
	case "response_format":
		switch t := v.Get("type").Str; t {
		case "text", "":
		case "json_object":
			r.ResponseFormat = &dialect.ResponseFormat{Type: t}
		case "json_schema":
			s := v.Get("json_schema")
			r.ResponseFormat = &dialect.ResponseFormat{Type: t, Name: s.Get("name").Str,
				Schema: json.RawMessage(s.Get("schema").Raw), Strict: s.Get("strict").Bool()}
		default:
			r.Unsupport("response_format")
		}
	case "reasoning_effort":
		if v.Str == "none" {
			r.Reasoning = &dialect.Reasoning{Disabled: true}
		} else if v.Str != "" {
			r.Reasoning = &dialect.Reasoning{Effort: v.Str}
		}
	case "user":
		r.User = v.Str
	case "n":
		if v.Int() != 1 {
			r.Unsupport(k)
		}
	case "logprobs":
		if v.Bool() {
			r.Unsupport(k)
		}
	case "presence_penalty", "frequency_penalty":
		if v.Float() != 0 {
			r.Unsupport(k)
		}
	default:
		if v.Type != gjson.Null {
			r.Unsupport(k)
		}
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

// decodeMessages reads messages: system and developer messages become the
// system prompt, tool messages tool_result blocks of one user message.
func decodeMessages(r *dialect.Request, v gjson.Result) error {
	if !v.IsArray() {
		return errors.New("messages: must be an array")
	}
	var err error
	i := -1
	v.ForEach(func(_, m gjson.Result) bool {
		i++
		role := m.Get("role").Str
		c := m.Get("content")
		switch role {
		case "system", "developer":
			r.System = append(r.System, textBlocks(c)...)
		case "user":
			var blocks []dialect.Block
			blocks, err = userBlocks(c, i)
			appendMessage(r, dialect.RoleUser, blocks...)
		case "assistant":
			var blocks []dialect.Block
			blocks, err = assistantBlocks(m, i)
			appendMessage(r, dialect.RoleAssistant, blocks...)
		case "tool":
			id := m.Get("tool_call_id").Str
			if id == "" {
				err = fmt.Errorf("messages[%d].tool_call_id: missing", i)
				return false
			}
			appendMessage(r, dialect.RoleUser, dialect.Block{Kind: dialect.BlockToolResult, ToolID: id, Content: textBlocks(c)})
		default:
			err = fmt.Errorf("messages[%d].role: %q is not supported", i, role)
		}
		return err == nil
	})
	return err
}

// appendMessage appends blocks to the last message if it has role, else as
// a new message: consecutive tool results form one user message.
func appendMessage(r *dialect.Request, role dialect.Role, blocks ...dialect.Block) {
	if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == role {
		r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
		return
	}
	r.Messages = append(r.Messages, dialect.Message{Role: role, Content: blocks})
}

// textBlocks reads content that is a string or an array of text parts.
func textBlocks(c gjson.Result) []dialect.Block {
	if c.Type == gjson.String {
		return []dialect.Block{{Kind: dialect.BlockText, Text: c.Str}}
	}
	var out []dialect.Block
	c.ForEach(func(_, p gjson.Result) bool {
		if p.Get("type").Str == "text" {
			out = append(out, dialect.Block{Kind: dialect.BlockText, Text: p.Get("text").Str, CacheControl: raw(p.Get("cache_control"))})
		}
		return true
	})
	return out
}

// raw is a member's raw JSON, nil if absent or null.
func raw(v gjson.Result) json.RawMessage {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// userBlocks reads a user message's content: text and images.
func userBlocks(c gjson.Result, i int) ([]dialect.Block, error) {
	if c.Type == gjson.String {
		return []dialect.Block{{Kind: dialect.BlockText, Text: c.Str}}, nil
	}
	var out []dialect.Block
	var err error
	c.ForEach(func(_, p gjson.Result) bool {
		switch t := p.Get("type").Str; t {
		case "text":
			out = append(out, dialect.Block{Kind: dialect.BlockText, Text: p.Get("text").Str, CacheControl: raw(p.Get("cache_control"))})
		case "image_url":
			out = append(out, dialect.Block{Kind: dialect.BlockImage, Image: ParseImageURL(p.Get("image_url.url").Str),
				CacheControl: raw(p.Get("cache_control"))})
		default:
			err = fmt.Errorf("messages[%d].content: parts of type %q cannot be translated", i, t)
		}
		return err == nil
	})
	return out, err
}

// ParseImageURL reads an image_url: a data: URL of base64 bytes, or a URL
// the provider fetches.
func ParseImageURL(u string) *dialect.Image {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok {
			if mt, ok := strings.CutSuffix(meta, ";base64"); ok {
				return &dialect.Image{MediaType: mt, Data: data}
			}
		}
	}
	return &dialect.Image{URL: u}
}

// assistantBlocks reads an assistant message: its reasoning (the signed
// thinking_blocks, else reasoning_content), text and tool calls.
func assistantBlocks(m gjson.Result, i int) ([]dialect.Block, error) {
	var out []dialect.Block
	if tb := m.Get("thinking_blocks"); tb.IsArray() {
		tb.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").Str {
			case "thinking":
				out = append(out, dialect.Block{Kind: dialect.BlockThinking, Text: b.Get("thinking").Str, Signature: b.Get("signature").Str})
			case "redacted_thinking":
				out = append(out, dialect.Block{Kind: dialect.BlockRedactedThinking, Data: b.Get("data").Str})
			}
			return true
		})
	} else if rc := m.Get("reasoning_content"); rc.Str != "" {
		out = append(out, dialect.Block{Kind: dialect.BlockThinking, Text: rc.Str})
	}
	for _, b := range textBlocks(m.Get("content")) {
		if b.Text != "" {
			out = append(out, b)
		}
	}
	var err error
	j := -1
	m.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
		j++
		args := tc.Get("function.arguments").Str
		if strings.TrimSpace(args) == "" {
			args = "{}"
		}
		if !gjson.Valid(args) || !gjson.Parse(args).IsObject() {
			err = fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: not a JSON object", i, j)
			return false
		}
		out = append(out, dialect.Block{Kind: dialect.BlockToolUse, ToolID: tc.Get("id").Str,
			ToolName: tc.Get("function.name").Str, Input: json.RawMessage(args)})
		return true
	})
	return out, err
}

// decodeTools reads function tools.
func decodeTools(r *dialect.Request, v gjson.Result) error {
	var err error
	v.ForEach(func(_, t gjson.Result) bool {
		if t.Get("type").Str != "function" {
			r.Unsupport("tools")
			return false
		}
		f := t.Get("function")
		schema := json.RawMessage(f.Get("parameters").Raw)
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, dialect.Tool{Name: f.Get("name").Str, Description: f.Get("description").Str,
			Schema: schema, CacheControl: raw(t.Get("cache_control"))})
		return true
	})
	return err
}

// decodeToolChoice reads tool_choice.
func decodeToolChoice(r *dialect.Request, v gjson.Result) error {
	tc := r.ToolChoice
	if tc == nil {
		tc = &dialect.ToolChoice{}
		r.ToolChoice = tc
	}
	switch v.Str {
	case "auto":
		tc.Mode = dialect.ToolAuto
	case "none":
		tc.Mode = dialect.ToolNone
	case "required":
		tc.Mode = dialect.ToolAny
	default:
		name := v.Get("function.name").Str
		if name == "" {
			return errors.New("tool_choice: must be auto, none, required or a function")
		}
		tc.Mode, tc.Name = dialect.ToolNamed, name
	}
	return nil
}
