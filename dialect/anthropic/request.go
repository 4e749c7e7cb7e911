package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

// DecodeRequest reads a Messages request. Members the neutral model cannot
// carry are listed in Request.Unsupported.
func (Codec) DecodeRequest(body []byte) (*dialect.Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("the body is not a JSON object")
	}
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

// decodeMember reads one top-level member.
func decodeMember(r *dialect.Request, k string, v gjson.Result) error {
	switch k {
	case "model":
		r.Model = v.Str
	case "max_tokens":
		r.MaxTokens = v.Int()
	case "system":
		if v.Type == gjson.String {
			r.System = []dialect.Block{{Kind: dialect.BlockText, Text: v.Str}}
			return nil
		}
		v.ForEach(func(_, b gjson.Result) bool {
			r.System = append(r.System, dialect.Block{Kind: dialect.BlockText, Text: b.Get("text").Str, CacheControl: raw(b.Get("cache_control"))})
			return true
		})
	case "messages":
		return decodeMessages(r, v)
	case "tools":
		v.ForEach(func(_, t gjson.Result) bool {
			if typ := t.Get("type").Str; typ != "" && typ != "custom" {
				r.Unsupport("tools." + typ)
				return true
			}
			r.Tools = append(r.Tools, dialect.Tool{Name: t.Get("name").Str, Description: t.Get("description").Str,
				Schema: json.RawMessage(t.Get("input_schema").Raw), CacheControl: raw(t.Get("cache_control"))})
			return true
		})
	case "tool_choice":
		tc := &dialect.ToolChoice{NoParallel: v.Get("disable_parallel_tool_use").Bool()}
		switch v.Get("type").Str {
		case "auto":
			tc.Mode = dialect.ToolAuto
		case "any":
			tc.Mode = dialect.ToolAny
		case "none":
			tc.Mode = dialect.ToolNone
		case "tool":
			tc.Mode, tc.Name = dialect.ToolNamed, v.Get("name").Str
		default:
			return errors.New("tool_choice.type: must be auto, any, none or tool")
		}
		r.ToolChoice = tc
	case "temperature":
		r.Temperature = float(v)
	case "top_p":
		r.TopP = float(v)
	case "top_k":
		if v.Type == gjson.Number {
			n := v.Int()
			r.TopK = &n
		}
	case "stop_sequences":
		v.ForEach(func(_, s gjson.Result) bool { r.Stop = append(r.Stop, s.Str); return true })
	case "stream":
		r.Stream = v.Bool()
	case "thinking":
		switch v.Get("type").Str {
		case "enabled":
			r.Reasoning = &dialect.Reasoning{BudgetTokens: v.Get("budget_tokens").Int()}
		case "disabled":
			r.Reasoning = &dialect.Reasoning{Disabled: true}
		case "adaptive":
			r.Reasoning = &dialect.Reasoning{Effort: "medium"}
		}
	case "metadata":
		r.User = v.Get("user_id").Str
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

// raw is a member's raw JSON, nil if absent or null.
func raw(v gjson.Result) json.RawMessage {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// decodeMessages reads the conversation.
func decodeMessages(r *dialect.Request, v gjson.Result) error {
	if !v.IsArray() {
		return errors.New("messages: must be an array")
	}
	var err error
	i := -1
	v.ForEach(func(_, m gjson.Result) bool {
		i++
		role := dialect.Role(m.Get("role").Str)
		if role != dialect.RoleUser && role != dialect.RoleAssistant {
			err = fmt.Errorf("messages.%d.role: must be user or assistant", i)
			return false
		}
		var blocks []dialect.Block
		blocks, err = decodeBlocks(r, m.Get("content"), fmt.Sprintf("messages.%d.content", i))
		r.Messages = append(r.Messages, dialect.Message{Role: role, Content: blocks})
		return err == nil
	})
	return err
}

// decodeBlocks reads content: a string or an array of blocks.
func decodeBlocks(r *dialect.Request, c gjson.Result, where string) ([]dialect.Block, error) {
	if c.Type == gjson.String {
		return []dialect.Block{{Kind: dialect.BlockText, Text: c.Str}}, nil
	}
	var out []dialect.Block
	var err error
	c.ForEach(func(_, b gjson.Result) bool {
		var bl dialect.Block
		bl, err = decodeBlock(r, b, where)
		if err == nil && bl.Kind != 0 {
			out = append(out, bl)
		}
		return err == nil
	})
	return out, err
}

// decodeBlock reads one content block; a kind of 0 is a block left out.
func decodeBlock(r *dialect.Request, b gjson.Result, where string) (dialect.Block, error) {
	bl := dialect.Block{CacheControl: raw(b.Get("cache_control"))}
	switch t := b.Get("type").Str; t {
	case "text":
		bl.Kind, bl.Text = dialect.BlockText, b.Get("text").Str
	case "image":
		src := b.Get("source")
		bl.Kind = dialect.BlockImage
		switch src.Get("type").Str {
		case "base64":
			bl.Image = &dialect.Image{MediaType: src.Get("media_type").Str, Data: src.Get("data").Str}
		case "url":
			bl.Image = &dialect.Image{URL: src.Get("url").Str}
		default:
			return bl, fmt.Errorf("%s: image sources of type %q cannot be translated", where, src.Get("type").Str)
		}
	case "tool_use":
		bl.Kind, bl.ToolID, bl.ToolName = dialect.BlockToolUse, b.Get("id").Str, b.Get("name").Str
		bl.Input = json.RawMessage(b.Get("input").Raw)
		if len(bl.Input) == 0 {
			bl.Input = json.RawMessage("{}")
		}
	case "tool_result":
		bl.Kind, bl.ToolID, bl.IsError = dialect.BlockToolResult, b.Get("tool_use_id").Str, b.Get("is_error").Bool()
		content, err := decodeBlocks(r, b.Get("content"), where+".tool_result")
		if err != nil {
			return bl, err
		}
		bl.Content = content
	case "thinking":
		bl.Kind, bl.Text, bl.Signature = dialect.BlockThinking, b.Get("thinking").Str, b.Get("signature").Str
	case "redacted_thinking":
		bl.Kind, bl.Data = dialect.BlockRedactedThinking, b.Get("data").Str
	default:
		return bl, fmt.Errorf("%s: blocks of type %q cannot be translated", where, t)
	}
	return bl, nil
}
