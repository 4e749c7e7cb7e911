package translate

import (
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
)

// BenchmarkTranslateEvent translates one text delta event, provider bytes
// to client bytes, in steady state: it must allocate nothing.
func BenchmarkTranslateEvent(b *testing.B) {
	for _, tc := range eventCases {
		b.Run(tc.name, func(b *testing.B) { benchmarkEvent(b, tc) })
	}
}

// eventCase is a stream's start and one text delta of it.
type eventCase struct {
	name  string
	start string
	event string
	dec   dialect.ProviderCodec
	enc   dialect.ClientCodec
}

var eventCases = []eventCase{
	{"chat-to-messages",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"content":" deterministic reply"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		openai.Codec{}, anthropic.Codec{}},
	{"messages-to-chat",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" deterministic reply\"}}\n\n",
		anthropic.Codec{}, openai.Codec{}},
}

func benchmarkEvent(b *testing.B, tc eventCase) {
	{
		{
			dec := tc.dec.NewStreamDecoder()
			enc := tc.enc.NewStreamEncoder(&dialect.Request{})
			var ev dialect.Event
			out := make([]byte, 0, 4096)
			dec.Feed([]byte(tc.start))
			for dec.Next(&ev) {
				out = enc.Encode(out[:0], &ev)
			}
			event := []byte(tc.event)
			// Warm the buffers.
			for range 4 {
				dec.Feed(event)
				for dec.Next(&ev) {
					out = enc.Encode(out[:0], &ev)
				}
			}
			b.SetBytes(int64(len(event)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				dec.Feed(event)
				n := 0
				for dec.Next(&ev) {
					out = enc.Encode(out[:0], &ev)
					n++
				}
				if n != 1 || len(out) == 0 {
					b.Fatalf("%d events, %q", n, out)
				}
			}
		}
	}
}

// TestTranslateEventAllocatesNothing keeps BenchmarkTranslateEvent's
// promise in the ordinary test run.
func TestTranslateEventAllocatesNothing(t *testing.T) {
	for _, tc := range eventCases {
		r := testing.Benchmark(func(b *testing.B) { benchmarkEvent(b, tc) })
		if r.N == 0 || r.AllocsPerOp() != 0 {
			t.Errorf("%s: %d allocations per event over %d", tc.name, r.AllocsPerOp(), r.N)
		}
	}
}
