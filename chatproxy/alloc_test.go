package chatproxy

import "testing"

// TestTapChunkAllocatesNothing: passing one content event of a stream
// through the tap, usage stripped, allocates nothing, whichever protocol.
// A long answer is thousands of such events; an allocation in each is a
// collection every few hundred streams.
func TestTapChunkAllocatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		proto Protocol
		ev    string
		want  int // bytes forwarded
	}{
		{
			name:  "openai chunk with usage null",
			proto: OpenAI,
			ev: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1763769600,"model":"qwen-plus",` +
				`"service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" the tower"},` +
				`"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
			want: -len(`,"usage":null`),
		},
		{
			name:  "anthropic text delta",
			proto: Anthropic,
			ev:    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the tower\"}}\n\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := []byte(tc.ev)
			buf := make([]byte, len(ev))
			tp := tap{proto: tc.proto, strip: true, meta: new(respMeta)}
			var out []byte
			allocs := testing.AllocsPerRun(200, func() {
				copy(buf, ev)
				out = tp.event(buf)
			})
			if len(out) != len(ev)+tc.want {
				t.Fatalf("forwarded %q", out)
			}
			if allocs != 0 {
				t.Errorf("%v allocations per event, want 0", allocs)
			}
		})
	}
}
