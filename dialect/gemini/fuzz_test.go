package gemini

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
)

// FuzzStreamDecoder feeds arbitrary bytes in arbitrary pieces: the
// decoder never panics, yields nothing after an error or a stop, and
// ends every stream with exactly one stop or error.
func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte(sseStream), uint8(7))
	f.Add([]byte("data: {\"error\":{\"code\":429}}\n\n"), uint8(1))
	f.Add([]byte("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}}]},\"finishReason\":\"STOP\"}]}\r\n\r\n"), uint8(3))
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
