package openai

import (
	"strconv"

	"github.com/caddy-air/caddy-air/dialect"
)

// EncodeRequest appends the chat completion request for r to dst. A
// stream asks for its usage (stream_options.include_usage), which the
// gateway bills. Thinking blocks are left out (Chat Completions takes no
// reasoning as input) and cache breakpoints too (OpenAI caches prompts by
// itself); both are recorded in r.Dropped.
func (Codec) EncodeRequest(dst []byte, r *dialect.Request) ([]byte, error) {
	b := append(dst, `{"model":`...)
	b = dialect.AppendString(b, r.Model)
	b = append(b, `,"messages":[`...)
	n := 0
	sep := func() {
		if n > 0 {
			b = append(b, ',')
		}
		n++
	}
	if len(r.System) > 0 {
		sep()
		b = append(b, `{"role":"system","content":`...)
		b = appendText(b, r, r.System)
		b = append(b, '}')
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Role == dialect.RoleAssistant {
			sep()
			b = appendAssistant(b, r, m.Content)
			continue
		}
		// Tool results first, as tool messages; the rest as one user
		// message after them.
		rest := 0
		for _, bl := range m.Content {
			if bl.Kind != dialect.BlockToolResult {
				rest++
				continue
			}
			sep()
			b = append(b, `{"role":"tool","tool_call_id":`...)
			b = dialect.AppendString(b, bl.ToolID)
			b = append(b, `,"content":`...)
			b = appendToolResult(b, r, &bl)
			b = append(b, '}')
		}
		if rest > 0 {
			sep()
			b = append(b, `{"role":"user","content":`...)
			b = appendUser(b, r, m.Content)
			b = append(b, '}')
		}
	}
	b = append(b, ']')
	b = appendTools(b, r)
	if r.MaxTokens > 0 {
		// max_tokens is deprecated, and refused by reasoning models.
		b = append(b, `,"max_completion_tokens":`...)
		b = dialect.AppendInt(b, r.MaxTokens)
	}
	b = appendFloat(b, `,"temperature":`, r.Temperature)
	b = appendFloat(b, `,"top_p":`, r.TopP)
	if r.TopK != nil {
		r.Unsupport("top_k")
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = dialect.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if f := r.ResponseFormat; f != nil {
		b = append(b, `,"response_format":{"type":`...)
		b = dialect.AppendString(b, f.Type)
		if f.Type == "json_schema" {
			b = append(b, `,"json_schema":{"name":`...)
			b = dialect.AppendString(b, f.Name)
			b = append(b, `,"schema":`...)
			b = append(b, f.Schema...)
			b = append(b, `,"strict":`...)
			b = strconv.AppendBool(b, f.Strict)
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if rs := r.Reasoning; rs != nil {
		if e := effort(rs); e != "" {
			b = append(b, `,"reasoning_effort":`...)
			b = dialect.AppendString(b, e)
		}
	}
	if r.User != "" {
		b = append(b, `,"user":`...)
		b = dialect.AppendString(b, r.User)
	}
	if r.Stream {
		b = append(b, `,"stream":true,"stream_options":{"include_usage":true}`...)
	}
	return append(b, '}'), nil
}

// effort is the reasoning_effort of a reasoning configuration: its own,
// or one for its budget of thinking tokens.
func effort(rs *dialect.Reasoning) string {
	switch {
	case rs.Effort != "":
		return rs.Effort
	case rs.Disabled:
		return ""
	case rs.BudgetTokens == 0:
		return ""
	case rs.BudgetTokens < 4096:
		return "low"
	case rs.BudgetTokens < 16384:
		return "medium"
	default:
		return "high"
	}
}

func appendFloat(b []byte, key string, f *float64) []byte {
	if f == nil {
		return b
	}
	b = append(b, key...)
	return strconv.AppendFloat(b, *f, 'g', -1, 64)
}

// appendText appends text blocks as one string.
func appendText(b []byte, r *dialect.Request, blocks []dialect.Block) []byte {
	if len(blocks) == 1 {
		noteCache(r, &blocks[0])
		return dialect.AppendString(b, blocks[0].Text)
	}
	b = append(b, '[')
	for i := range blocks {
		noteCache(r, &blocks[i])
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = dialect.AppendString(b, blocks[i].Text)
		b = append(b, '}')
	}
	return append(b, ']')
}

// noteCache records a cache breakpoint left out.
func noteCache(r *dialect.Request, bl *dialect.Block) {
	if bl.CacheControl != nil {
		r.Drop("cache_control")
	}
}

// appendUser appends a user message's text and images as content parts,
// or its only text block as a string, which every OpenAI-compatible
// service takes.
func appendUser(b []byte, r *dialect.Request, blocks []dialect.Block) []byte {
	var only *dialect.Block
	for i := range blocks {
		if blocks[i].Kind == dialect.BlockToolResult {
			continue
		}
		if only != nil || blocks[i].Kind != dialect.BlockText {
			only = nil
			break
		}
		only = &blocks[i]
	}
	if only != nil {
		noteCache(r, only)
		return dialect.AppendString(b, only.Text)
	}
	b = append(b, '[')
	n := 0
	for i := range blocks {
		bl := &blocks[i]
		if bl.Kind == dialect.BlockToolResult {
			continue
		}
		noteCache(r, bl)
		if n > 0 {
			b = append(b, ',')
		}
		n++
		switch bl.Kind {
		case dialect.BlockImage:
			b = appendImage(b, bl.Image)
		default:
			b = append(b, `{"type":"text","text":`...)
			b = dialect.AppendString(b, bl.Text)
			b = append(b, '}')
		}
	}
	return append(b, ']')
}

// appendImage appends an image_url part: a data: URL, or the image's URL.
func appendImage(b []byte, im *dialect.Image) []byte {
	b = append(b, `{"type":"image_url","image_url":{"url":`...)
	if im.Data != "" {
		b = dialect.AppendString(b, "data:"+im.MediaType+";base64,"+im.Data)
	} else {
		b = dialect.AppendString(b, im.URL)
	}
	return append(b, `}}`...)
}

// appendToolResult appends a tool result's content: its text. Images in a
// result cannot be carried by a tool message.
func appendToolResult(b []byte, r *dialect.Request, bl *dialect.Block) []byte {
	var text []byte
	for i := range bl.Content {
		c := &bl.Content[i]
		switch c.Kind {
		case dialect.BlockText:
			if len(text) > 0 {
				text = append(text, '\n')
			}
			text = append(text, c.Text...)
		case dialect.BlockImage:
			r.Unsupport("tool_result.content.image")
		}
	}
	if bl.IsError && len(text) == 0 {
		text = append(text, "error"...)
	}
	return dialect.AppendBytes(b, text)
}

// appendAssistant appends an assistant message: text and tool calls.
func appendAssistant(b []byte, r *dialect.Request, blocks []dialect.Block) []byte {
	b = append(b, `{"role":"assistant","content":`...)
	var text []byte
	calls := 0
	for i := range blocks {
		switch bl := &blocks[i]; bl.Kind {
		case dialect.BlockText:
			noteCache(r, bl)
			text = append(text, bl.Text...)
		case dialect.BlockToolUse:
			calls++
		case dialect.BlockThinking, dialect.BlockRedactedThinking:
			r.Drop("thinking")
		}
	}
	if len(text) == 0 && calls > 0 {
		b = append(b, "null"...)
	} else {
		b = dialect.AppendBytes(b, text)
	}
	if calls > 0 {
		b = appendToolCalls(b, blocks, []byte("{}"))
	}
	return append(b, '}')
}

// appendToolCalls appends the tool use blocks of blocks as a message's
// "tool_calls" member, each call's arguments a JSON string of its input;
// a call without input has empty's.
func appendToolCalls(b []byte, blocks []dialect.Block, empty []byte) []byte {
	b = append(b, `,"tool_calls":[`...)
	n := 0
	for i := range blocks {
		bl := &blocks[i]
		if bl.Kind != dialect.BlockToolUse {
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = append(b, `{"id":`...)
		b = dialect.AppendString(b, bl.ToolID)
		b = append(b, `,"type":"function","function":{"name":`...)
		b = dialect.AppendString(b, bl.ToolName)
		b = append(b, `,"arguments":`...)
		input := bl.Input
		if len(input) == 0 {
			input = empty
		}
		b = dialect.AppendBytes(b, input)
		b = append(b, `}}`...)
	}
	return append(b, ']')
}

// appendTools appends tools and tool_choice.
func appendTools(b []byte, r *dialect.Request) []byte {
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range r.Tools {
			t := &r.Tools[i]
			if t.CacheControl != nil {
				r.Drop("cache_control")
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"function","function":{"name":`...)
			b = dialect.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = dialect.AppendString(b, t.Description)
			}
			b = append(b, `,"parameters":`...)
			b = append(b, t.Schema...)
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	tc := r.ToolChoice
	if tc == nil || len(r.Tools) == 0 {
		return b
	}
	switch tc.Mode {
	case dialect.ToolAuto:
		b = append(b, `,"tool_choice":"auto"`...)
	case dialect.ToolNone:
		b = append(b, `,"tool_choice":"none"`...)
	case dialect.ToolAny:
		b = append(b, `,"tool_choice":"required"`...)
	case dialect.ToolNamed:
		b = append(b, `,"tool_choice":{"type":"function","function":{"name":`...)
		b = dialect.AppendString(b, tc.Name)
		b = append(b, `}}`...)
	}
	if tc.NoParallel {
		b = append(b, `,"parallel_tool_calls":false`...)
	}
	return b
}
