package responses

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
)

// FuzzDecodeRequest reads arbitrary bodies: the codec never panics, and a
// request it accepts encodes as a valid Messages and Chat Completions
// body.
func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","instructions":"i","input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"f"}}`))
	f.Add([]byte(`{"model":"m","input":[{"type":"reasoning","summary":[{"type":"summary_text","text":"t"}],"encrypted_content":"s"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`))
	f.Add([]byte(`{"model":"m","input":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}],"text":{"format":{"type":"json_schema","schema":{}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Codec{}.DecodeRequest(body)
		if err != nil {
			return
		}
		for _, p := range []dialect.ProviderCodec{anthropic.Codec{}, openai.Codec{}} {
			c := *r
			b, err := p.EncodeRequest(nil, &c)
			if err == nil && !gjson.ValidBytes(b) {
				t.Fatalf("%T wrote %s for %s", p, b, body)
			}
		}
	})
}

// FuzzStreamEncoder encodes arbitrary sequences of events: every event
// written is valid JSON with the next sequence number, and nothing
// follows a stop or an error.
func FuzzStreamEncoder(f *testing.F) {
	f.Add([]byte{1, 2, 3, 3, 4, 5}, "text")
	f.Add([]byte{1, 2, 3, 2, 3, 6}, `{"a":`)
	f.Fuzz(func(t *testing.T, ops []byte, text string) {
		enc := Codec{}.NewStreamEncoder(&dialect.Request{})
		var b []byte
		for i, op := range ops {
			ev := dialect.Event{Kind: dialect.EventKind(op%6 + 1), Index: int(op/6) % 4, Text: []byte(text), ID: text, Model: text}
			ev.Block.Kind = dialect.BlockKind(op/24%6 + 1)
			ev.Delta = dialect.DeltaKind(op/6%4 + 1)
			ev.Block.ToolID, ev.Block.Data = text, text
			if ev.Kind == dialect.EventError {
				ev.Err = &dialect.Error{Status: 500, Kind: dialect.ErrServer, Message: text}
			}
			b = enc.Encode(b, &ev)
			_ = i
		}
		for i, d := range splitEvents(b) {
			if !gjson.Valid(d) || gjson.Get(d, "sequence_number").Int() != int64(i) {
				t.Fatalf("event %d: %s", i, d)
			}
		}
	})
}

// splitEvents returns the data of each SSE event of b.
func splitEvents(b []byte) []string {
	var out []string
	for _, line := range splitLines(string(b)) {
		if len(line) > 6 && line[:6] == "data: " {
			out = append(out, line[6:])
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
