package openai

import (
	"errors"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// EncodeResponse appends the chat.completion object of r to dst.
func (Codec) EncodeResponse(dst []byte, r *dialect.Response) ([]byte, error) {
	b := append(dst, `{"id":`...)
	b = dialect.AppendString(b, r.ID)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = dialect.AppendInt(b, time.Now().Unix())
	b = append(b, `,"model":`...)
	b = dialect.AppendString(b, r.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	var text, reasoning []byte
	thinking, calls := 0, 0
	for i := range r.Content {
		switch bl := &r.Content[i]; bl.Kind {
		case dialect.BlockText:
			text = append(text, bl.Text...)
		case dialect.BlockThinking:
			reasoning = append(reasoning, bl.Text...)
			thinking++
		case dialect.BlockRedactedThinking:
			thinking++
		case dialect.BlockToolUse:
			calls++
		}
	}
	if len(text) == 0 && calls > 0 {
		b = append(b, "null"...)
	} else {
		b = dialect.AppendBytes(b, text)
	}
	if thinking > 0 {
		b = append(b, `,"reasoning_content":`...)
		b = dialect.AppendBytes(b, reasoning)
		b = append(b, `,"thinking_blocks":[`...)
		n := 0
		for i := range r.Content {
			bl := &r.Content[i]
			if bl.Kind != dialect.BlockThinking && bl.Kind != dialect.BlockRedactedThinking {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendThinkingBlock(b, bl.Kind, bl.Text, bl.Signature, bl.Data)
		}
		b = append(b, ']')
	}
	if calls > 0 {
		b = appendToolCalls(b, r.Content, nil)
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	b = dialect.AppendString(b, finishReason(r.StopReason))
	b = append(b, `}]`...)
	if r.UsageReported {
		b = append(b, `,"usage":`...)
		b = AppendUsage(b, r.Usage)
	}
	return append(b, '}'), nil
}

// appendThinkingBlock appends one of thinking_blocks, in Anthropic's shape.
func appendThinkingBlock(b []byte, kind dialect.BlockKind, text, signature, data string) []byte {
	if kind == dialect.BlockRedactedThinking {
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = dialect.AppendString(b, data)
		return append(b, '}')
	}
	b = append(b, `{"type":"thinking","thinking":`...)
	b = dialect.AppendString(b, text)
	b = append(b, `,"signature":`...)
	b = dialect.AppendString(b, signature)
	return append(b, '}')
}

// AppendUsage appends u as a Chat Completions usage object, whose
// prompt_tokens include the cache reads and writes and whose
// completion_tokens include the reasoning.
func AppendUsage(b []byte, u billing.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = dialect.AppendInt(b, u.PromptTotal())
	b = append(b, `,"completion_tokens":`...)
	b = dialect.AppendInt(b, u.Output)
	b = append(b, `,"total_tokens":`...)
	b = dialect.AppendInt(b, u.Total())
	b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
	b = dialect.AppendInt(b, u.CacheRead)
	if u.CacheCreation > 0 {
		b = append(b, `,"cache_write_tokens":`...)
		b = dialect.AppendInt(b, u.CacheCreation)
	}
	b = append(b, `},"completion_tokens_details":{"reasoning_tokens":`...)
	b = dialect.AppendInt(b, u.Reasoning)
	return append(b, `}}`...)
}

// DecodeResponse reads a chat.completion object.
func (Codec) DecodeResponse(body []byte) (*dialect.Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the provider's answer is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	ch := root.Get("choices.0")
	if !ch.Exists() {
		return nil, errors.New("the provider's answer has no choices")
	}
	r := &dialect.Response{ID: root.Get("id").Str, Model: root.Get("model").Str,
		StopReason: stopReason(ch.Get("finish_reason").Str)}
	m := ch.Get("message")
	blocks, err := assistantBlocks(m, 0)
	if err != nil {
		return nil, errors.New("the provider's answer has a tool call whose arguments are not a JSON object")
	}
	r.Content = blocks
	if u := root.Get("usage"); u.IsObject() {
		r.Usage, err = NormalizeUsage([]byte(u.Raw))
		r.UsageReported = err == nil
	}
	return r, nil
}
