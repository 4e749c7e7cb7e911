package chatproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// cannedRT answers every request with a fixed response, without a network.
type cannedRT struct {
	ct, body string
}

func (c cannedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {c.ct}}, Body: io.NopCloser(strings.NewReader(c.body)), Request: r}, nil
}

// benchmarkServe measures one pass-through exchange through Serve.
func benchmarkServe(b *testing.B, rt cannedRT, body string) {
	p := &Proxy{Transport: rt}
	prov := provider("openai", time.Minute, "http://upstream.invalid/v1")
	in, aerr := InspectChat([]byte(body), 0)
	if aerr != nil {
		b.Fatal(aerr)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		serveAll(p, w, r, &Call{Protocol: OpenAI, Provider: prov, Path: "/chat/completions", Body: []byte(body), Inspected: in})
	}
}

func BenchmarkServePassThrough(b *testing.B) {
	benchmarkServe(b, cannedRT{"application/json",
		`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`},
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
}

func BenchmarkServePassThroughStream(b *testing.B) {
	var sb strings.Builder
	for range 20 {
		sb.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}` + "\n\n")
	}
	sb.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":20,"total_tokens":30}}` + "\n\ndata: [DONE]\n\n")
	benchmarkServe(b, cannedRT{"text/event-stream", sb.String()}, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
}
