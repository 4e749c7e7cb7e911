package chatproxy

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// TestServeDecodesEncodedAnswers: an upstream that answers gzip or deflate
// although the gateway asked for identity is decoded, tapped for its usage
// and forwarded plain; before, its body passed through still encoded (to
// clients that never asked for it) and its usage was estimated from
// nothing. An encoding the gateway cannot undo passes through as it is.
func TestServeDecodesEncodedAnswers(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	zl := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := zlib.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	stream := chunk(`[{"index":0,"delta":{"content":"hi"}}]`, "") +
		chunk(`[]`, `{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}`) + "data: [DONE]\n\n"
	for _, tc := range []struct {
		name, encoding, ct string
		body               []byte
		stream             bool
		wantBody           string
		wantUsage          billing.Usage
		wantSource         billing.Source
		wantEncoding       string
	}{
		{"gzip JSON", "gzip", "application/json", gz([]byte(chatJSON)), false, chatJSON,
			billing.Usage{Input: 20, CacheRead: 100, Output: 30, Reasoning: 20}, billing.SourceReported, ""},
		{"deflate JSON", "deflate", "application/json", zl([]byte(chatJSON)), false, chatJSON,
			billing.Usage{Input: 20, CacheRead: 100, Output: 30, Reasoning: 20}, billing.SourceReported, ""},
		{"gzip SSE", "gzip", "text/event-stream", gz([]byte(stream)), true, "",
			billing.Usage{Input: 7, Output: 3}, billing.SourceReported, ""},
		{"br passes through", "br", "application/json", []byte("\x0b\x02\x80opaque"), false, "\x0b\x02\x80opaque",
			billing.Usage{}, billing.SourceEstimated, "br"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				w.Header().Set("Content-Encoding", tc.encoding)
				w.Write(tc.body)
			})
			body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
			if tc.stream {
				body = `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`
			}
			rec := httptest.NewRecorder()
			res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
			if got := rec.Header().Get("Content-Encoding"); got != tc.wantEncoding {
				t.Errorf("Content-Encoding %q, want %q", got, tc.wantEncoding)
			}
			out := rec.Body.String()
			switch {
			case tc.stream && !strings.HasSuffix(out, "data: [DONE]\n\n"):
				t.Errorf("client got %q", out)
			case !tc.stream && out != tc.wantBody:
				t.Errorf("client got %q, want %q", out, tc.wantBody)
			}
			if res.Source != tc.wantSource || tc.wantSource == billing.SourceReported && res.Usage != tc.wantUsage {
				t.Errorf("usage %+v (%s), want %+v (%s)", res.Usage, res.Source, tc.wantUsage, tc.wantSource)
			}
			if res.Outcome != OutcomeOK {
				t.Errorf("outcome %q", res.Outcome)
			}
		})
	}
}
