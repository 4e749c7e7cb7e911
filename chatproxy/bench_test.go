package chatproxy

import (
	"bytes"
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/longchat"
)

// benchBody is a realistic chat request of about 2 KB.
var benchBody = []byte(`{"model":"qwen-plus","messages":[{"role":"system","content":"You are a helpful assistant. Answer concisely, cite sources when you can, and prefer metric units."},` +
	`{"role":"user","content":"` + strings.Repeat("Tell me about the history of the Eiffel Tower and its construction. ", 16) + `"},` +
	`{"role":"assistant","content":"The Eiffel Tower was built for the 1889 World's Fair."},` +
	`{"role":"user","content":[{"type":"text","text":"And what about this picture?"},{"type":"image_url","image_url":{"url":"https://example.com/tower.jpg"}}]}],` +
	`"tools":[{"type":"function","function":{"name":"search","description":"Search the web","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}],` +
	`"temperature":0.7,"top_p":0.9,"max_tokens":1024,"stop":["END"],"presence_penalty":0.1,"stream":true,"enable_thinking":true,"thinking_budget":512,"seed":42}`)

// smallBody is a realistic chat request of about 1 KiB: a system prompt
// and one question.
var smallBody = []byte(`{"model":"qwen-plus","messages":[{"role":"system","content":"You are a helpful assistant for an online bookshop. ` +
	`Answer questions about orders, shipping, returns and book recommendations. Be concise and friendly, and never invent order numbers."},` +
	`{"role":"user","content":"` + strings.Repeat(`Hello! I ordered three books last Tuesday; the page still says \"processing\". `, 9) + `"}],` +
	`"temperature":0.7,"max_tokens":512,"stream":true}`)

// BenchmarkInspectChat inspects requests of growing size: the long ones are
// a coding agent's conversation (longchat), dense with code.
func BenchmarkInspectChat(b *testing.B) {
	for _, bc := range []struct {
		name string
		body []byte
	}{
		{"1KiB", smallBody},
		{"200KiB", longchat.Body("qwen-plus", 200<<10, `"stream":true`)},
		{"1MiB", longchat.Body("qwen-plus", 1<<20, `"stream":true`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if _, e := openai.InspectChat(bc.body, 0); e != nil {
					b.Fatal(e.Message)
				}
			}
		})
	}
}

func BenchmarkPrepareBody(b *testing.B) {
	in, e := openai.InspectChat(benchBody, 0)
	if e != nil {
		b.Fatal(e.Message)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, inj, err := dialect.PrepareBody(openai.Wire, benchBody, in, "qwen-plus-2025-01-25"); err != nil || !inj {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareBodyInPlace edits a 1 MiB body, with room in its
// buffer, against dialect.PrepareBody's copy. Each in-place iteration first
// restores the body, a copy of its own that the handler never makes.
func BenchmarkPrepareBodyInPlace(b *testing.B) {
	body := longchat.Body("qwen-plus", 1<<20, `"stream":true`)
	in, e := openai.InspectChat(body, 0)
	if e != nil {
		b.Fatal(e.Message)
	}
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, inj, err := dialect.PrepareBody(openai.Wire, body, in, "qwen-plus-2025-01-25"); err != nil || !inj {
				b.Fatal(err)
			}
		}
	})
	b.Run("in-place", func(b *testing.B) {
		buf := make([]byte, len(body), len(body)+dialect.PrepareBodyRoom(openai.Wire, in, "qwen-plus-2025-01-25"))
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			copy(buf, body)
			if _, inj, err := dialect.PrepareBodyInPlace(openai.Wire, buf[:len(body)], in, "qwen-plus-2025-01-25"); err != nil || !inj {
				b.Fatal(err)
			}
		}
	})
}

// memTransport answers every request with a canned response, in memory.
type memTransport struct {
	status int
	header http.Header
	body   []byte
}

func (m *memTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: m.status, Header: m.header, Body: io.NopCloser(bytes.NewReader(m.body)), Request: r}, nil
}

// discardWriter is a flushable ResponseWriter that drops the body.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
func (d *discardWriter) Flush()                      {}

func benchServe(b *testing.B, tr *memTransport, c *Call) {
	p := &Proxy{Transport: tr}
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gw/v1/chat/completions", nil)
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	b.SetBytes(int64(len(tr.body)))
	for b.Loop() {
		w.n = 0
		res := serveAll(p, w, r, c)
		if res.Outcome != OutcomeOK || res.Source != "reported" {
			b.Fatalf("result %+v", res)
		}
	}
}

func BenchmarkSSETap(b *testing.B) {
	var s strings.Builder
	s.WriteString(chunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]`, "null"))
	for i := 0; i < 18; i++ {
		s.WriteString(chunk(`[{"index":0,"delta":{"content":"token `+strings.Repeat("x", i%7)+`"},"finish_reason":null}]`, "null"))
	}
	s.WriteString(chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`, "null"))
	s.WriteString(chunk(`[]`, `{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,"prompt_tokens_details":{"cached_tokens":64}}`))
	s.WriteString("data: [DONE]\n\n")
	tr := &memTransport{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}}, body: []byte(s.String())}
	in, _ := openai.InspectChat(benchBody, 0)
	benchServe(b, tr, &Call{Wire: openai.Wire, Provider: provider("openai", 0, "http://up/v1"), Path: "/chat/completions", Body: benchBody, Inspected: in, StripUsage: true})
}

func BenchmarkJSONTap(b *testing.B) {
	tr := &memTransport{status: 200, header: http.Header{"Content-Type": {"application/json"}}, body: []byte(chatJSON)}
	in, _ := openai.InspectChat(benchBody, 0)
	benchServe(b, tr, &Call{Wire: openai.Wire, Provider: provider("openai", 0, "http://up/v1"), Path: "/chat/completions", Body: benchBody, Inspected: in})
}

// chunkStream is an upstream SSE body: n copies of one content chunk, then
// a tail (the usage chunk and [DONE]). Each Read returns one chunk, as when
// the upstream's events arrive apart.
type chunkStream struct {
	n        int
	ev, tail []byte
	off      int // bytes of the current chunk already read
}

func (s *chunkStream) Read(p []byte) (int, error) {
	if s.n > 0 {
		n := copy(p, s.ev[s.off:])
		if s.off += n; s.off == len(s.ev) {
			s.n, s.off = s.n-1, 0
		}
		return n, nil
	}
	if len(s.tail) > 0 {
		n := copy(p, s.tail)
		s.tail = s.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

func (s *chunkStream) Close() error { return nil }

// BenchmarkStreamChunk is the whole response side of a stream, per content
// chunk: read, idle timer, tap, usage strip, write and flush. One stream of
// b.N chunks is delivered, so what a stream costs once (its buffers, the
// header timer) is spread over the chunks: allocs/op is what each chunk
// allocates in steady state.
func BenchmarkStreamChunk(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-mock-0123456789abcdef","object":"chat.completion.chunk","created":1763769600,"model":"qwen-plus",` +
		`"service_tier":"default","system_fingerprint":"fp_mock","choices":[{"index":0,"delta":{"content":" the tower was"},` +
		`"logprobs":null,"finish_reason":null}],"usage":null}` + "\n\n")
	tail := []byte(chunk(`[]`, `{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}`) + "data: [DONE]\n\n")
	in, _ := openai.InspectChat(smallBody, 0)
	c := &Call{Wire: openai.Wire, Provider: provider("openai", 0, "http://up/v1"), Path: "/chat/completions", Body: smallBody, Inspected: in, StripUsage: true}
	benchStream(b, c, ev, tail, len(ev)-len(`,"usage":null`), 0)
}

// BenchmarkStreamChunkAnthropic is BenchmarkStreamChunk for a Messages
// stream's content_block_delta events.
func BenchmarkStreamChunkAnthropic(b *testing.B) {
	ev := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" the tower was\"}}\n\n")
	delta := "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":20}}\n\n"
	tail := []byte(delta + "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	body := []byte(`{"model":"claude","max_tokens":512,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`)
	in, _ := anthropic.InspectMessages(body, 0)
	c := &Call{Wire: anthropic.Wire, Provider: provider("anthropic", 0, "http://up/v1"), Path: "/messages", Body: body, Inspected: in}
	benchStream(b, c, ev, tail, len(ev), len(delta))
}

// benchStream delivers one stream of b.N copies of ev, then tail, and
// checks that each copy was forwarded as want bytes, and extra bytes of
// the tail before its held final event.
func benchStream(b *testing.B, c *Call, ev, tail []byte, want, extra int) {
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gw/v1/chat/completions", nil)
	w := &discardWriter{h: make(http.Header)}
	p := &Proxy{}
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	b.ResetTimer()
	at := newAttempt(r.Context(), time.Hour)
	at.resp = &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: &chunkStream{n: b.N, ev: ev, tail: tail}}
	var res Result
	p.deliver(w, r, c, at, &res, nil)
	b.StopTimer()
	at.close()
	res.Close()
	if res.Outcome != OutcomeOK || res.Source != "reported" {
		b.Fatalf("result %+v", res)
	}
	if w.n != b.N*want+extra {
		b.Fatalf("wrote %d bytes, want %d", w.n, b.N*want+extra)
	}
}

// BenchmarkHoldBody holds a 512 KiB non-streaming answer whole, as it
// waits for its ledger record, with and without a declared length, read
// 32 KiB at a time.
func BenchmarkHoldBody(b *testing.B) {
	const pre, post = `{"choices":[{"message":{"content":"`, `"}}],"usage":{"prompt_tokens":9,"completion_tokens":7}}`
	answer := []byte(pre + strings.Repeat("z", 512<<10) + post)
	c := &Call{Wire: openai.Wire, Provider: provider("openai", 0, "http://up/v1"), Path: "/chat/completions", Body: smallBody}
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gw/v1/chat/completions", nil)
	for _, declared := range []bool{true, false} {
		name := "chunked"
		if declared {
			name = "length"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(answer)))
			for b.Loop() {
				at := newAttempt(r.Context(), time.Hour)
				at.resp = &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					ContentLength: -1, Body: io.NopCloser(&pieces{b: answer, n: 32 << 10})}
				if declared {
					at.resp.ContentLength = int64(len(answer))
				}
				var res Result
				(&Proxy{}).deliver(&discardWriter{h: make(http.Header)}, r, c, at, &res, nil)
				at.close()
				if len(res.Held.body) != len(answer) || res.Usage.Output != 7 {
					b.Fatalf("held %d bytes, usage %+v", len(res.Held.body), res.Usage)
				}
				res.Close()
			}
		})
	}
}

// pieces reads b at most n bytes at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(q []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(q[:min(len(q), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}
