package chatproxy

import (
	"bytes"
	"context"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestCopyStreamBatches delivers one stream, events of every kind, in one
// read, in reads of a few bytes and in reads of one event or so: the
// client gets the same bytes each time, with only the injected usage cut.
func TestCopyStreamBatches(t *testing.T) {
	var up, want strings.Builder
	add := func(ev, forwarded string) {
		up.WriteString(ev)
		want.WriteString(forwarded)
	}
	add(": a comment\n\n", ": a comment\n\n")
	for i := 0; i < 40; i++ {
		c := chunk(`[{"index":0,"delta":{"content":"token `+strings.Repeat("x", i)+`"},"finish_reason":null}]`, "")
		switch i % 4 {
		case 0: // the injected "usage":null, cut
			add(chunk(`[{"index":0,"delta":{"content":"t"}}]`, "null"), chunk(`[{"index":0,"delta":{"content":"t"}}]`, ""))
		case 1: // untouched
			add(c, c)
		case 2: // several data lines: forwarded as they are
			ev := "data: {\"choices\":[],\ndata: \"usage\":null}\n\n"
			add(ev, ev)
		case 3: // CRLF line ends
			crlf := strings.ReplaceAll(chunk(`[{"index":0,"delta":{"content":"r"}}]`, "null"), "\n", "\r\n")
			add(crlf, strings.ReplaceAll(chunk(`[{"index":0,"delta":{"content":"r"}}]`, ""), "\n", "\r\n"))
		}
	}
	add(chunk(`[]`, `{"prompt_tokens":9,"completion_tokens":40}`), "") // the usage chunk, dropped
	add("data: [DONE]\n\n", "data: [DONE]\n\n")

	for i, read := range []func(io.Reader) io.Reader{
		func(r io.Reader) io.Reader { return r },
		iotest.OneByteReader,
		func(r io.Reader) io.Reader { return &sizedReader{r: r, n: 97} },
		func(r io.Reader) io.Reader { return &sizedReader{r: r, n: 301} },
	} {
		at := newAttempt(context.Background(), time.Hour)
		at.resp = &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: io.NopCloser(read(strings.NewReader(up.String())))}
		w := &recordWriter{h: make(http.Header)}
		r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gw/v1/chat/completions", nil)
		c := &Call{Wire: openai.Wire, Provider: provider("openai", 0, "http://up/v1"), StripUsage: true}
		var res Result
		(&Proxy{}).deliver(w, r, c, at, &res, nil)
		at.close()
		res.BytesOut += res.Held.Release(w)
		res.Close()
		if got := w.b.String(); got != want.String() {
			t.Errorf("Test %d: the client got\n%q\nwant\n%q", i, got, want.String())
		}
		if res.Outcome != OutcomeOK || res.Usage.Input != 9 || res.Usage.Output != 40 || res.BytesOut != int64(w.b.Len()) {
			t.Errorf("Test %d: result %+v, %d bytes written", i, res, w.b.Len())
		}
	}
}

// sizedReader returns at most n bytes per read.
type sizedReader struct {
	r io.Reader
	n int
}

func (s *sizedReader) Read(p []byte) (int, error) { return s.r.Read(p[:min(len(p), s.n)]) }

// recordWriter is a flushable ResponseWriter that keeps the body.
type recordWriter struct {
	h http.Header
	b bytes.Buffer
}

func (d *recordWriter) Header() http.Header         { return d.h }
func (d *recordWriter) WriteHeader(int)             {}
func (d *recordWriter) Write(p []byte) (int, error) { return d.b.Write(p) }
func (d *recordWriter) Flush()                      {}
