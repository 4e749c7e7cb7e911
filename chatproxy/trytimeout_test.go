package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// attemptLog records the attempts told to an upstream.Observer.
type attemptLog struct {
	mu   sync.Mutex
	seen []string
}

func (a *attemptLog) Attempt(provider, result string, retried bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if retried {
		result += "+retried"
	}
	a.seen = append(a.seen, result)
}

// TestServeTryTimeout: with a try timeout, an attempt on an upstream that
// sends no response headers in time is abandoned (its request cancelled),
// counted as a timeout that was retried, and the next upstream answers;
// when every attempt exceeds it the client gets 504 upstream_timeout.
// Without one, the hanging upstream holds the request until the
// provider's timeout, which ends it with 504 and no retry, as before.
func TestServeTryTimeout(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	ok := answer(200, "application/json", chatJSON)
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	for _, tc := range []struct {
		name       string
		try        time.Duration
		handlers   []func(http.ResponseWriter, *http.Request)
		status     int
		attempts   int
		results    []string
		wantInBody string
	}{
		{"hang then healthy", 500 * time.Millisecond, []func(http.ResponseWriter, *http.Request){hang, ok},
			200, 2, []string{"timeout+retried", "ok"}, `"chat.completion"`},
		{"both hang", 500 * time.Millisecond, []func(http.ResponseWriter, *http.Request){hang, hang},
			504, 2, []string{"timeout+retried", "timeout"}, "try_timeout of 500ms"},
		{"unset: the provider's timeout ends it", 0, []func(http.ResponseWriter, *http.Request){hang, ok},
			504, 1, []string{"timeout"}, "did not answer within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var urls []string
			var ups []*fakeUpstream
			for _, h := range tc.handlers {
				u := newUpstream(t, h)
				ups, urls = append(ups, u), append(urls, u.URL)
			}
			prov := provider("openai", 2*time.Second, urls...)
			attempts := &attemptLog{}
			core, logs := observer.New(zap.InfoLevel)
			p := &Proxy{Attempts: attempts, Logger: zap.New(core), Router: routing.New(routing.Config{Table: providers.SingleTable(prov),
				Options: map[string]routing.Options{"prov": {TryTimeout: tc.try}}, MaxWait: -1})}
			rec := httptest.NewRecorder()
			res := serveAll(p, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, prov, body, ""))
			if rec.Code != tc.status || res.Attempts != tc.attempts || !strings.Contains(rec.Body.String(), tc.wantInBody) {
				t.Fatalf("client got %d %s after %d attempts, want %d with %q after %d", rec.Code, rec.Body.String(), res.Attempts,
					tc.status, tc.wantInBody, tc.attempts)
			}
			if tc.status == 504 && gjson.Get(rec.Body.String(), "error.code").Str != "upstream_timeout" {
				t.Errorf("504 body %s, want code upstream_timeout", rec.Body.String())
			}
			if strings.Join(attempts.seen, " ") != strings.Join(tc.results, " ") {
				t.Errorf("attempt metrics %v, want %v", attempts.seen, tc.results)
			}
			if n := logs.FilterField(zap.String("result", "timeout")).Len(); n != strings.Count(strings.Join(tc.results, " "), "timeout") {
				t.Errorf("%d attempt log lines with result timeout, want one per timed-out attempt: %v", n, logs.All())
			}
			for i, u := range ups[:tc.attempts] {
				if u.count() != 1 {
					t.Errorf("upstream %d got %d requests, want 1", i, u.count())
				}
			}
		})
	}
}
