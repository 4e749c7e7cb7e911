package anthropic

import (
	"errors"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
)

// EncodeResponse appends the message object of r to dst.
func (Codec) EncodeResponse(dst []byte, r *dialect.Response) ([]byte, error) {
	b := append(dst, `{"id":`...)
	b = dialect.AppendString(b, r.ID)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = dialect.AppendString(b, r.Model)
	b = append(b, `,"content":[`...)
	for i := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		bl := r.Content[i]
		bl.CacheControl = nil
		b = appendBlock(b, nil, &bl)
	}
	b = append(b, `],"stop_reason":`...)
	b = dialect.AppendString(b, string(r.StopReason))
	b = append(b, `,"stop_sequence":`...)
	if r.StopSequence != "" {
		b = dialect.AppendString(b, r.StopSequence)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"usage":`...)
	b = AppendUsage(b, r.Usage)
	return append(b, '}'), nil
}

// AppendUsage appends u as a Messages usage object, whose input_tokens
// exclude the cache reads and writes; the reasoning part of the output,
// when there is one, is output_tokens_details.thinking_tokens.
func AppendUsage(b []byte, u billing.Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = dialect.AppendInt(b, u.Input)
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = dialect.AppendInt(b, u.CacheCreation)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = dialect.AppendInt(b, u.CacheRead)
	if u.CacheCreation > 0 {
		b = append(b, `,"cache_creation":{"ephemeral_5m_input_tokens":`...)
		b = dialect.AppendInt(b, u.CacheCreation-u.CacheCreation1h)
		b = append(b, `,"ephemeral_1h_input_tokens":`...)
		b = dialect.AppendInt(b, u.CacheCreation1h)
		b = append(b, '}')
	}
	b = append(b, `,"output_tokens":`...)
	b = dialect.AppendInt(b, u.Output)
	if u.Reasoning > 0 {
		b = append(b, `,"output_tokens_details":{"thinking_tokens":`...)
		b = dialect.AppendInt(b, u.Reasoning)
		b = append(b, '}')
	}
	return append(b, '}')
}

// DecodeResponse reads a message object.
func (Codec) DecodeResponse(body []byte) (*dialect.Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the provider's answer is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	if root.Get("type").Str != "message" {
		return nil, errors.New("the provider's answer is not a message")
	}
	r := &dialect.Response{ID: root.Get("id").Str, Model: root.Get("model").Str,
		StopReason: stopReason(root.Get("stop_reason").Str), StopSequence: root.Get("stop_sequence").Str}
	blocks, err := decodeBlocks(&dialect.Request{}, root.Get("content"), "content")
	if err != nil {
		return nil, errors.New("the provider's answer has " + err.Error())
	}
	r.Content = blocks
	if u := root.Get("usage"); u.IsObject() {
		r.Usage, err = NormalizeUsage([]byte(u.Raw))
		r.UsageReported = err == nil
	}
	return r, nil
}
