package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// unavailableJSON is the answer when no upstream can serve a request.
const unavailableJSON = `{"error":{"message":"no upstream provider of this model could serve the request; retry after the time in Retry-After","type":"upstream_error","param":null,"code":"upstream_unavailable"}}`

// TestServeHoldsTheEnd checks that Serve writes no final byte itself: a
// stream's final event and a whole JSON body wait in Held until the caller
// releases them, once the record is durable.
func TestServeHoldsTheEnd(t *testing.T) {
	json := `{"id":"c1","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`
	openAI := chunk(`[{"index":0,"delta":{"content":"a"}}]`, "") + "data: [DONE]\n\n"
	messages := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	for i, tc := range []struct {
		proto             dialect.Wire
		handler           func(http.ResponseWriter, *http.Request)
		before, held      string
		status, heldState int
	}{
		{openai.Wire, answer(200, "application/json", json), "", json, 200, 200},
		{openai.Wire, sseAnswer([]string{openAI}), strings.TrimSuffix(openAI, "data: [DONE]\n\n"), "data: [DONE]\n\n", 200, 200},
		{anthropic.Wire, sseAnswer([]string{messages}), strings.TrimSuffix(messages, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", 200, 200},
		// The only upstream answers 429: its answer (its error's fields,
		// apierror.UpstreamBody) and Retry-After are passed through.
		{openai.Wire, answer(429, "application/json", `{"error":{"message":"slow down"}}`, "Retry-After", "7"), "",
			`{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`, 0, 429},
	} {
		up := newUpstream(t, tc.handler)
		body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
		rec := httptest.NewRecorder()
		res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), chatCall(t, tc.proto, provider("p", 0, up.URL), body, ""))
		if got := rec.Body.String(); got != tc.before {
			t.Errorf("Test %d: written before release %q, want %q", i, got, tc.before)
		}
		if res.Held == nil || res.Held.Status() != tc.heldState {
			t.Fatalf("Test %d: result %+v", i, res)
		}
		res.Held.Release(rec)
		res.Close()
		if got := rec.Body.String(); got != tc.before+tc.held {
			t.Errorf("Test %d: after release %q", i, got)
		}
		if tc.status == 0 && (rec.Code != 429 || rec.Header().Get("Retry-After") != "7") {
			t.Errorf("Test %d: held error answered %d %v", i, rec.Code, rec.Header())
		}
	}
}

// TestServeCutStreamEndsInError checks that a stream the upstream breaks
// off, or ends without its final event, ends with the protocol's error
// event, so that the client can tell the answer is truncated.
func TestServeCutStreamEndsInError(t *testing.T) {
	for i, tc := range []struct {
		proto dialect.Wire
		first string
		want  string
	}{
		{openai.Wire, chunk(`[{"index":0,"delta":{"content":"half"}}]`, ""), `data: {"error":{"message":"the upstream provider broke off the response`},
		{anthropic.Wire, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"half\"}}\n\n", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\""},
	} {
		up := newUpstream(t, sseAnswer([]string{tc.first})) // and then ends
		body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
		rec := httptest.NewRecorder()
		res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, tc.proto, provider("p", 0, up.URL), body, ""))
		got := rec.Body.String()
		if !strings.HasPrefix(got, tc.first) || !strings.Contains(got[len(tc.first):], tc.want) || !strings.HasSuffix(got, "\n\n") {
			t.Errorf("Test %d: client got %q", i, got)
		}
		if res.Outcome != OutcomeUpstreamError || res.Status != 200 {
			t.Errorf("Test %d: result %+v", i, res)
		}
	}
}

// TestServeJSONTimeoutAfterHeaders checks that a non-streaming answer whose
// upstream falls silent after its headers becomes a 504 JSON error, not a
// truncated 200.
func TestServeJSONTimeoutAfterHeaders(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","choices":[`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 50*time.Millisecond, up.URL), body, ""))
	if rec.Code != 504 || gjson.Get(rec.Body.String(), "error.code").Str != "upstream_timeout" {
		t.Errorf("client got %d %s", rec.Code, rec.Body.String())
	}
	if !res.Reached || res.Outcome != OutcomeTimeout || res.Status != 504 {
		t.Errorf("result %+v", res)
	}
}

// TestServeLargeBodyHoldsLastRead checks that a body larger than maxHeld is
// forwarded as it arrives but for its last read, and arrives whole.
func TestServeLargeBodyHoldsLastRead(t *testing.T) {
	big := `{"choices":[{"message":{"content":"` + strings.Repeat("z", 3*maxHeld) + `"}}],"usage":{"prompt_tokens":9,"completion_tokens":7}}`
	up := newUpstream(t, answer(200, "application/json", big))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
	before := rec.Body.Len()
	if before == 0 || before >= len(big) {
		t.Errorf("%d of %d bytes written before release", before, len(big))
	}
	res.Held.Release(rec)
	res.Close()
	if rec.Body.String() != big || res.Usage.Output != 7 {
		t.Errorf("released %d bytes, usage %+v", rec.Body.Len(), res.Usage)
	}
}

// TestServeSendsRequestID checks the id that matches an upstream's logs
// with the ledger.
func TestServeSendsRequestID(t *testing.T) {
	up := newUpstream(t, answer(200, "application/json", `{"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	c := chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "")
	c.RequestID = "req_abc"
	serveAll(&Proxy{}, httptest.NewRecorder(), clientRequest(context.Background(), body), c)
	if got := up.headers[0].Get(RequestIDHeader); got != "req_abc" {
		t.Errorf("upstream saw request id %q", got)
	}
}

// TestServeClientLeavesBeforeHeaders checks that a request the upstream
// received is reported as written, so that it is recorded as canceled,
// although no answer arrived.
func TestServeClientLeavesBeforeHeaders(t *testing.T) {
	received := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(received)
		<-r.Context().Done()
	})
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("p", 400) + `"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-received; cancel() }()
	res := serveAll(&Proxy{}, httptest.NewRecorder(), clientRequest(ctx, body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
	if !res.Wrote || res.Reached || res.Outcome != OutcomeCanceled || res.Usage.Input < 100 || res.Usage.Output != 0 {
		t.Errorf("result %+v", res)
	}
}

// TestServeHoldsWholeBodies: a non-streaming answer below maxHeld, with a
// declared length or without, is held whole and released byte for byte;
// from maxHeld on, all but its last read leaves before the release.
func TestServeHoldsWholeBodies(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	for i, size := range []int{100, bufSize - 1, bufSize, bufSize + 1, 100 << 10, maxHeld - 1, maxHeld + 1} {
		for _, declared := range []bool{true, false} {
			const pre, post = `{"choices":[{"message":{"content":"`, `"}}],"usage":{"prompt_tokens":9,"completion_tokens":7}}`
			big := pre + strings.Repeat("z", size-len(pre)-len(post)) + post
			var kv []string
			if declared {
				kv = []string{"Content-Length", strconv.Itoa(len(big))}
			}
			up := newUpstream(t, answer(200, "application/json", big, kv...))
			rec := httptest.NewRecorder()
			res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
			if before := rec.Body.Len(); (size < maxHeld) != (before == 0) {
				t.Errorf("Test %d (%d bytes, declared %v): %d bytes written before release", i, size, declared, before)
			}
			res.Held.Release(rec)
			res.Close()
			if rec.Body.String() != big || res.Usage.Output != 7 {
				t.Errorf("Test %d (%d bytes, declared %v): released %d bytes, usage %+v", i, size, declared, rec.Body.Len(), res.Usage)
			}
		}
	}
}
