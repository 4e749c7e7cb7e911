package translate

import (
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"github.com/caddy-air/caddy-air/dialect/responses"
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
	// kept is the bytes of each event the encoder must keep: a Responses
	// encoder keeps every item's text, which its .done events and final
	// response repeat whole. The others keep nothing.
	kept int
}

var eventCases = []eventCase{
	{"chat-to-messages",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"content":" deterministic reply"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		openai.Codec{}, anthropic.Codec{}, 0},
	{"messages-to-chat",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" deterministic reply\"}}\n\n",
		anthropic.Codec{}, openai.Codec{}, 0},
	{"messages-to-responses",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" deterministic reply\"}}\n\n",
		anthropic.Codec{}, responses.Codec{}, len(" deterministic reply")},
	{"messages-to-responses-arguments",
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"c\",\"content\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n",
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\": \\\"Os\"}}\n\n",
		anthropic.Codec{}, responses.Codec{}, len(`{"city": "Os`)},
	{"chat-to-responses",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n",
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"content":" deterministic reply"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n",
		openai.Codec{}, responses.Codec{}, len(" deterministic reply")},
	// Bedrock's binary event stream: its frames (CRC-checked) to either
	// client's SSE.
	{"bedrock-to-messages", bedrockStart, bedrockDelta, bedrock.Codec{}, anthropic.Codec{}, 0},
	{"bedrock-to-chat", bedrockStart, bedrockDelta, bedrock.Codec{}, openai.Codec{}, 0},
	// Gemini's SSE chunks (whose first text opens the block) to a chat
	// client, through the neutral events.
	{"gemini-to-chat",
		geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":"A"}]}}],"responseId":"r1","modelVersion":"gemini-2.5-pro"}`),
		geminiChunk(`{"candidates":[{"content":{"role":"model","parts":[{"text":" deterministic reply"}]}}],"responseId":"r1","modelVersion":"gemini-2.5-pro"}`),
		gemini.Codec{}, openai.Codec{}, 0},
}

// bedrockStart and bedrockDelta are ConverseStream frames: its start and
// a first text delta (which opens the block), then a text delta.
var (
	bedrockStart = string(bedrock.EncodeEvent("messageStart", map[string]any{"role": "assistant", "p": "abcdefghijklmnop"})) +
		string(bedrock.EncodeEvent("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": "A"}, "p": "abcdefghijklmnop"}))
	bedrockDelta = string(bedrock.EncodeEvent("contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]any{"text": " deterministic reply"}, "p": "abcdefghijklmnop"}))
)

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
// promise in the ordinary test run: no allocation per event, and no byte
// either (allocs/op rounds a rare large allocation away), but the text an
// encoder must keep and its growth (at most 4 bytes allocated per byte
// kept, over the stream; 5 allows for size classes).
func TestTranslateEventAllocatesNothing(t *testing.T) {
	for _, tc := range eventCases {
		r := testing.Benchmark(func(b *testing.B) { benchmarkEvent(b, tc) })
		if r.N == 0 || r.AllocsPerOp() != 0 {
			t.Errorf("%s: %d allocations per event over %d", tc.name, r.AllocsPerOp(), r.N)
		}
		if r.AllocedBytesPerOp() > int64(5*tc.kept) {
			t.Errorf("%s: %d bytes allocated per event over %d, %d kept", tc.name, r.AllocedBytesPerOp(), r.N, tc.kept)
		}
	}
}

// BenchmarkTranslateExchange translates a whole streamed exchange of a
// Messages client to a chat model: its ~1 KB request, decoded and encoded,
// and a 20-chunk answer with its usage, through the Writer.
func BenchmarkTranslateExchange(b *testing.B) {
	req := []byte(`{"model":"mock-gpt","max_tokens":1024,"stream":true,"system":"You are a helpful assistant that answers briefly and precisely, citing the relevant facts and nothing else.",` +
		`"messages":[{"role":"user","content":"` + strings.Repeat("Tell me about the history of the city and its harbour. ", 14) + `"}]}`)
	var stream strings.Builder
	stream.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n")
	for range 20 {
		stream.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{"content":" deterministic"},"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	}
	stream.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n" +
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"g","choices":[],"usage":{"prompt_tokens":200,"completion_tokens":20}}` + "\n\n" + "data: [DONE]\n\n")
	events := strings.SplitAfter(stream.String(), "\n\n")
	tr := For(Messages, Chat)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		x, err := tr.Request(req, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Body(""); err != nil {
			b.Fatal(err)
		}
		tw := x.Writer(w)
		tw.Header().Set("Content-Type", "text/event-stream")
		tw.WriteHeader(200)
		for _, e := range events {
			_, _ = tw.Write([]byte(e))
		}
		tw.Close()
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkTranslateExchangeResponses translates a whole streamed
// exchange of a Responses client to a messages model: its ~1 KB request,
// decoded and encoded, and a 20-delta answer with its usage, through the
// Writer.
func BenchmarkTranslateExchangeResponses(b *testing.B) {
	req := []byte(`{"model":"mock-claude","max_output_tokens":1024,"stream":true,"store":false,"instructions":"You are a helpful assistant that answers briefly and precisely, citing the relevant facts and nothing else.",` +
		`"input":[{"role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("Tell me about the history of the city and its harbour. ", 14) + `"}]}]}`)
	deltas := make([]string, 20)
	for i := range deltas {
		deltas[i] = `{"type":"text_delta","text":" deterministic"}`
	}
	events := strings.SplitAfter(anthropicStream(`{"input_tokens":200,"output_tokens":1}`, `{"output_tokens":20}`,
		blockEvents(0, `{"type":"text","text":""}`, deltas...)), "\n\n")
	tr := For(Responses, Messages)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		x, err := tr.Request(req, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := x.Body(""); err != nil {
			b.Fatal(err)
		}
		tw := x.Writer(w)
		tw.Header().Set("Content-Type", "text/event-stream")
		tw.WriteHeader(200)
		for _, e := range events {
			_, _ = tw.Write([]byte(e))
		}
		tw.Close()
	}
}
