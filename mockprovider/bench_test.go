package mockprovider

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// discardWriter is a flushable ResponseWriter that drops the body.
type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { d.n += len(b); return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkChatStream20 measures the mock's own cost for a 20-chunk stream
// with usage, the shape the performance harness requests.
func BenchmarkChatStream20(b *testing.B) {
	h := New(Config{})
	body := []byte(`{"model":"mock-gpt","stream":true,"stream_options":{"include_usage":true},"mock_chunks":20,"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a short poem about gateways."}]}`)
	req, _ := http.NewRequest(http.MethodPost, "http://mock/v1/chat/completions", nil)
	rd := bytes.NewReader(body)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset(body)
		req.Body = io.NopCloser(rd)
		clear(w.h)
		h.ServeHTTP(w, req)
	}
	if w.n == 0 {
		b.Fatal("no output")
	}
}
