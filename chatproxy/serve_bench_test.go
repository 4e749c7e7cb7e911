package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
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
	in, aerr := openai.InspectChat([]byte(body), 0)
	if aerr != nil {
		b.Fatal(aerr)
	}
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		serveAll(p, w, r, &Call{Wire: openai.Wire, Provider: prov, Path: "/chat/completions", Body: []byte(body), Inspected: in})
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

// BenchmarkServeGeminiStream is BenchmarkServePassThroughStream's
// exchange with a Chat Completions client of a gemini model: the request
// translated, built by the endpoint, the 20-chunk Gemini stream
// transcoded into Messages, tapped, and written as Chat Completions.
func BenchmarkServeGeminiStream(b *testing.B) {
	var sb strings.Builder
	for range 20 {
		sb.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"tok "}]}}],"responseId":"r1","modelVersion":"gemini-2.5-flash"}` + "\r\n\r\n")
	}
	sb.WriteString(`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"end"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":21},"responseId":"r1"}` + "\r\n\r\n")
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	p := &Proxy{Transport: cannedRT{"text/event-stream", sb.String()}}
	prov := provider("gemini", time.Minute, "http://upstream.invalid")
	in, aerr := openai.InspectChat([]byte(body), 0)
	if aerr != nil {
		b.Fatal(aerr)
	}
	tr := translate.For(translate.Chat, translate.Gemini)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		x, err := tr.Request([]byte(body), translate.Options{})
		if err != nil {
			b.Fatal(err)
		}
		var tw *translate.Writer
		leg := func(t *routing.Target) (*Leg, error) {
			gb, err := x.Body(t.UpstreamModel)
			if err != nil {
				return nil, err
			}
			tw = x.Writer(w)
			return &Leg{Wire: anthropic.Wire, Body: gb, Writer: tw, Transcode: x.Transcoder(),
				NewRequest: func(ctx context.Context, a providers.Attempt, body []byte) (*http.Request, error) {
					e := gemini.Endpoint{BaseURL: a.BaseURL, APIKey: a.APIKey}
					return e.NewRequest(ctx, x.Model(""), true, body)
				}}, nil
		}
		res := p.Serve(w, r, &Call{Wire: openai.Wire, Provider: prov, Inspected: in, Leg: leg})
		if res.Held != nil {
			res.Held.Release(res.Writer)
		}
		res.Close()
		tw.Close()
		if res.Usage.Output != 21 {
			b.Fatalf("usage %+v, body %s", res.Usage, w.Body)
		}
	}
}
