package bedrock

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
)

// FuzzStreamDecoder feeds arbitrary bytes in arbitrary pieces: the
// decoder never panics, yields nothing after an error or a stop, and
// ends every stream with exactly one stop or error.
func FuzzStreamDecoder(f *testing.F) {
	f.Add(toolStream(), uint8(7))
	f.Add(EncodeException("throttlingException", "slow"), uint8(1))
	f.Add(EncodeEvent("contentBlockDelta", obj{"contentBlockIndex": 99999, "delta": obj{"text": "x"}}), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, step uint8) {
		d := Codec{}.NewStreamDecoder()
		var ev dialect.Event
		ends := 0
		check := func() {
			if ends > 0 {
				t.Fatalf("event %d after the end", ev.Kind)
			}
			if ev.Kind == dialect.EventStop || ev.Kind == dialect.EventError {
				ends++
			}
			if ev.Kind == dialect.EventError && ev.Err == nil {
				t.Fatal("an error event without its error")
			}
		}
		n := int(step%64) + 1
		for len(b) > 0 {
			k := min(n, len(b))
			d.Feed(b[:k])
			b = b[k:]
			for d.Next(&ev) {
				check()
			}
		}
		if d.End(&ev) {
			check()
		}
		if ends != 1 {
			t.Fatalf("%d ends, want 1", ends)
		}
	})
}

// FuzzEventPayload sends well-framed events with arbitrary types and
// payloads after a valid start: the same guarantees hold.
func FuzzEventPayload(f *testing.F) {
	f.Add("contentBlockDelta", []byte(`{"contentBlockIndex":0,"delta":{"text":"a\u00e9\n"}}`))
	f.Add("contentBlockStart", []byte(`{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"x","name":"y"}}}`))
	f.Add("contentBlockDelta", []byte(`{"contentBlockIndex":2,"delta":{"reasoningContent":{"redactedContent":"AAA="}}}`))
	f.Add("metadata", []byte(`{"usage":{"inputTokens":-5,"outputTokens":1e30}}`))
	f.Add("messageStop", []byte(`{"stopReason":"stop_sequence"}`))
	f.Fuzz(func(t *testing.T, eventType string, payload []byte) {
		var stream []byte
		stream = append(stream, EncodeEvent("messageStart", obj{"role": "assistant"})...)
		stream = append(stream, encodeRaw(eventType, payload)...)
		stream = append(stream, EncodeEvent("messageStop", obj{"stopReason": "end_turn"})...)
		stream = append(stream, EncodeEvent("metadata", obj{"usage": obj{"inputTokens": 1}})...)
		d := Codec{}.NewStreamDecoder()
		var ev dialect.Event
		d.Feed(stream)
		ends := 0
		for d.Next(&ev) {
			if ends > 0 {
				t.Fatal("an event after the end")
			}
			if ev.Kind == dialect.EventStop || ev.Kind == dialect.EventError {
				ends++
			}
			if ev.Kind == dialect.EventStop && (ev.Usage.Input < 0 || ev.Usage.Output < 0) {
				t.Fatalf("negative usage %+v", ev.Usage)
			}
		}
		if d.End(&ev) {
			ends++
		}
		if ends != 1 {
			t.Fatalf("%d ends", ends)
		}
	})
}
