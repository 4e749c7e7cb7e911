package anthropic

import (
	"strconv"

	"github.com/caddy-air/caddy-air/dialect"
)

// EncodeRequest appends the Messages request for r to dst. max_tokens,
// which Messages requires, is r.MaxTokens or DefaultMaxTokens. Reasoning
// without a signature (from a provider that signs none) is left out of the
// history and recorded in r.Dropped: Anthropic refuses unsigned thinking.
// Consecutive messages of one role are merged, as Messages requires.
func (Codec) EncodeRequest(dst []byte, r *dialect.Request) ([]byte, error) {
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	b := append(dst, `{"model":`...)
	b = dialect.AppendString(b, r.Model)
	b = append(b, `,"max_tokens":`...)
	b = dialect.AppendInt(b, maxTokens)
	if len(r.System) > 0 {
		b = append(b, `,"system":[`...)
		for i := range r.System {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBlock(b, r, &r.System[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"messages":[`...)
	for i := range r.Messages {
		m := &r.Messages[i]
		if i > 0 && r.Messages[i-1].Role == m.Role {
			b = append(b, ',') // merged into the previous message
		} else {
			if i > 0 {
				b = append(b, `]},`...)
			}
			b = append(b, `{"role":`...)
			b = dialect.AppendString(b, string(m.Role))
			b = append(b, `,"content":[`...)
		}
		n := 0
		for j := range m.Content {
			bl := &m.Content[j]
			if bl.Kind == dialect.BlockThinking && bl.Signature == "" {
				r.Drop("reasoning_content")
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendBlock(b, r, bl)
		}
		if n == 0 {
			b = append(b, `{"type":"text","text":""}`...)
		}
	}
	if len(r.Messages) > 0 {
		b = append(b, `]}`...)
	}
	b = append(b, ']')
	b = appendTools(b, r)
	b = appendFloat(b, `,"temperature":`, r.Temperature)
	b = appendFloat(b, `,"top_p":`, r.TopP)
	if r.TopK != nil {
		b = append(b, `,"top_k":`...)
		b = dialect.AppendInt(b, *r.TopK)
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"stop_sequences":[`...)
		for i, s := range r.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = dialect.AppendString(b, s)
		}
		b = append(b, ']')
	}
	if r.ResponseFormat != nil {
		r.Unsupport("response_format")
	}
	b = appendThinking(b, r, maxTokens)
	if r.User != "" {
		b = append(b, `,"metadata":{"user_id":`...)
		b = dialect.AppendString(b, r.User)
		b = append(b, '}')
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	return append(b, '}'), nil
}

// effortBudget is the budget_tokens of an OpenAI reasoning_effort.
func effortBudget(effort string) int64 {
	switch effort {
	case "minimal", "low":
		return minThinkingBudget
	case "high":
		return 16384
	default:
		return 4096
	}
}

// appendThinking appends the thinking configuration: a budget below
// max_tokens, as Messages requires, or none when max_tokens leaves no room
// for the smallest budget (then "reasoning_effort" is dropped).
func appendThinking(b []byte, r *dialect.Request, maxTokens int64) []byte {
	rs := r.Reasoning
	if rs == nil {
		return b
	}
	if rs.Disabled {
		return append(b, `,"thinking":{"type":"disabled"}`...)
	}
	budget := rs.BudgetTokens
	if budget == 0 {
		budget = effortBudget(rs.Effort)
	}
	budget = min(budget, maxTokens-1)
	if budget < minThinkingBudget {
		r.Drop("reasoning_effort")
		return b
	}
	b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
	b = dialect.AppendInt(b, budget)
	return append(b, '}')
}

func appendFloat(b []byte, key string, f *float64) []byte {
	if f == nil {
		return b
	}
	b = append(b, key...)
	return strconv.AppendFloat(b, *f, 'g', -1, 64)
}

// appendBlock appends one content block.
func appendBlock(b []byte, r *dialect.Request, bl *dialect.Block) []byte {
	switch bl.Kind {
	case dialect.BlockText:
		b = append(b, `{"type":"text","text":`...)
		b = dialect.AppendString(b, bl.Text)
	case dialect.BlockImage:
		b = append(b, `{"type":"image","source":`...)
		if bl.Image.Data != "" {
			b = append(b, `{"type":"base64","media_type":`...)
			b = dialect.AppendString(b, bl.Image.MediaType)
			b = append(b, `,"data":`...)
			b = dialect.AppendString(b, bl.Image.Data)
		} else {
			b = append(b, `{"type":"url","url":`...)
			b = dialect.AppendString(b, bl.Image.URL)
		}
		b = append(b, '}')
	case dialect.BlockToolUse:
		b = append(b, `{"type":"tool_use","id":`...)
		b = dialect.AppendString(b, bl.ToolID)
		b = append(b, `,"name":`...)
		b = dialect.AppendString(b, bl.ToolName)
		b = append(b, `,"input":`...)
		if len(bl.Input) == 0 {
			b = append(b, "{}"...)
		} else {
			b = append(b, bl.Input...)
		}
	case dialect.BlockToolResult:
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = dialect.AppendString(b, bl.ToolID)
		if bl.IsError {
			b = append(b, `,"is_error":true`...)
		}
		b = append(b, `,"content":[`...)
		for i := range bl.Content {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendBlock(b, r, &bl.Content[i])
		}
		b = append(b, ']')
	case dialect.BlockThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = dialect.AppendString(b, bl.Text)
		b = append(b, `,"signature":`...)
		b = dialect.AppendString(b, bl.Signature)
	case dialect.BlockRedactedThinking:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = dialect.AppendString(b, bl.Data)
	default:
		b = append(b, `{"type":"text","text":""`...)
	}
	if bl.CacheControl != nil {
		b = append(b, `,"cache_control":`...)
		b = append(b, bl.CacheControl...)
	}
	return append(b, '}')
}

// appendTools appends tools and tool_choice.
func appendTools(b []byte, r *dialect.Request) []byte {
	if len(r.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i := range r.Tools {
			t := &r.Tools[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = dialect.AppendString(b, t.Name)
			if t.Description != "" {
				b = append(b, `,"description":`...)
				b = dialect.AppendString(b, t.Description)
			}
			b = append(b, `,"input_schema":`...)
			if len(t.Schema) == 0 {
				b = append(b, `{"type":"object"}`...)
			} else {
				b = append(b, t.Schema...)
			}
			if t.CacheControl != nil {
				b = append(b, `,"cache_control":`...)
				b = append(b, t.CacheControl...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	tc := r.ToolChoice
	if tc == nil || len(r.Tools) == 0 {
		return b
	}
	b = append(b, `,"tool_choice":{"type":`...)
	switch tc.Mode {
	case dialect.ToolNone:
		b = append(b, `"none"`...)
	case dialect.ToolAny:
		b = append(b, `"any"`...)
	case dialect.ToolNamed:
		b = append(b, `"tool","name":`...)
		b = dialect.AppendString(b, tc.Name)
	default:
		b = append(b, `"auto"`...)
	}
	if tc.NoParallel && tc.Mode != dialect.ToolNone {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}
