package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestServeStreamEnd: what an upstream does after a stream's final event
// (or its error event) neither keeps the client waiting nor is forwarded
// nor held in memory, and an upstream that breaks off inside an event
// gets the gateway's error as an event of its own. Before, the final
// event reached the client only when the upstream closed the connection
// (up to the provider's timeout), everything sent after it was held in
// memory and forwarded, an error event followed by silence ended as a
// timeout with a second error event, and the gateway's error was glued
// onto the upstream's unfinished event.
func TestServeStreamEnd(t *testing.T) {
	const done = "data: [DONE]\n\n"
	first := chunk(`[{"index":0,"delta":{"content":"first"}}]`, "")
	errEvent := "data: {\"error\":{\"message\":\"overloaded\",\"type\":\"server_error\"}}\n\n"
	for _, tc := range []struct {
		name string
		// send writes the upstream's stream; hold keeps the connection
		// open afterwards until the request ends.
		send        func(w io.Writer)
		hold        bool
		wantEnd     string // what the client's body must end with
		wantOutcome string
		notWant     []string // what the client must not get
		maxOut      int      // most bytes the client may get (0: no bound)
	}{
		{
			name:        "final event, then the connection held open",
			send:        func(w io.Writer) { io.WriteString(w, first+done) },
			hold:        true,
			wantEnd:     done,
			wantOutcome: OutcomeOK,
		},
		{
			name: "final event, then a flood",
			send: func(w io.Writer) {
				io.WriteString(w, first+done)
				flood := "data: " + strings.Repeat("AFTER", 1<<16) + "\n\n"
				for range 160 { // 50 MiB
					if _, err := io.WriteString(w, flood); err != nil {
						return
					}
				}
			},
			wantEnd:     done,
			wantOutcome: OutcomeOK,
			notWant:     []string{"AFTER"},
			maxOut:      4 << 10,
		},
		{
			name: "final event, then more events and a second [DONE]",
			send: func(w io.Writer) {
				io.WriteString(w, first+done+chunk(`[{"index":0,"delta":{"content":"AFTER"}}]`, "")+done)
			},
			wantEnd:     done,
			wantOutcome: OutcomeOK,
			notWant:     []string{"AFTER"},
		},
		{
			name:        "an error event, then silence",
			send:        func(w io.Writer) { io.WriteString(w, first+errEvent) },
			hold:        true,
			wantEnd:     errEvent,
			wantOutcome: OutcomeUpstreamError,
			notWant:     []string{"upstream_cut", "upstream_timeout"},
		},
		{
			name:        "an error event, then the end",
			send:        func(w io.Writer) { io.WriteString(w, first+errEvent) },
			wantEnd:     errEvent,
			wantOutcome: OutcomeUpstreamError,
			notWant:     []string{"upstream_cut"},
		},
		{
			name:        "cut inside an event",
			send:        func(w io.Writer) { io.WriteString(w, first+`data: {"id":"c1","object":"chat.compl`) },
			wantEnd:     "chat.compl\n\ndata: {\"error\":",
			wantOutcome: OutcomeUpstreamError,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.send(w)
				w.(http.Flusher).Flush()
				if tc.hold {
					<-r.Context().Done()
				}
			})
			body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
			rec := httptest.NewRecorder()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			res := serveAll(&Proxy{}, rec, clientRequest(ctx, body), chatCall(t, openai.Wire, provider("openai", time.Minute, up.URL), body, ""))
			out := rec.Body.String()
			if ctx.Err() != nil {
				t.Fatal("the stream waited for the upstream's timeout")
			}
			if tc.wantEnd == done && !strings.HasSuffix(out, done) || tc.wantEnd != done && !strings.Contains(out, tc.wantEnd) {
				t.Errorf("client got ...%q, want it to end with %q", tail(out, 120), tc.wantEnd)
			}
			if strings.Count(out, `"error"`) > 1 {
				t.Errorf("client got more than one error event: %q", tail(out, 400))
			}
			for _, s := range tc.notWant {
				if strings.Contains(out, s) {
					t.Errorf("client got %q: ...%q", s, tail(out, 200))
				}
			}
			if tc.maxOut > 0 && len(out) > tc.maxOut {
				t.Errorf("client got %d bytes, want at most %d", len(out), tc.maxOut)
			}
			if res.Outcome != tc.wantOutcome {
				t.Errorf("outcome %q, want %q", res.Outcome, tc.wantOutcome)
			}
		})
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// TestServeSwitchingProtocols: an upstream that answers a POST with 101
// Switching Protocols is a failed attempt, answered at once; before, the
// connection it handed over was read until the provider's timeout.
func TestServeSwitchingProtocols(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		_, _ = io.Copy(io.Discard, conn) // until the gateway lets go
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res := serveAll(&Proxy{}, rec, clientRequest(ctx, body), chatCall(t, openai.Wire, provider("openai", 20*time.Second, up.URL), body, ""))
	if ctx.Err() != nil {
		t.Fatal("the request waited for the upstream's timeout")
	}
	if rec.Code != http.StatusServiceUnavailable || res.Outcome != OutcomeUnavailable {
		t.Errorf("client got %d %s, outcome %q; want 503, unavailable", rec.Code, rec.Body.String(), res.Outcome)
	}
}
