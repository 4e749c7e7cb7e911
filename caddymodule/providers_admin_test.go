package caddymodule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// failingRouter returns a router of one provider with two keys, whose
// first upstream failed enough to open its breaker, at now.
func failingRouter(t *testing.T, now time.Time) *routing.Router {
	t.Helper()
	p := &providers.Provider{Name: "up", Protocol: providers.ProtocolOpenAI,
		BaseURLs: []string{"https://user:hunter2@up.example/v1?api-key=sk-in-query"}, APIKeys: []string{"sk-secret-1", "sk-secret-2"}}
	table, err := providers.NewTable([]*providers.Provider{p}, []*providers.Route{{Pattern: "m", Provider: p, UpstreamModel: "m-1"}})
	if err != nil {
		t.Fatal(err)
	}
	rt := routing.New(routing.Config{Table: table, Now: func() time.Time { return now }, MaxWait: -1})
	// The first upstream picked fails every time, the other answers,
	// until the first one's breaker opens.
	var first *routing.Upstream
	for range 100 {
		tg, err := rt.Plan(routing.Request{Route: table.Routes()[0]}).Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = tg.Upstream
		}
		if tg.Upstream == first {
			tg.Done(routing.Outcome{Status: 500})
		} else {
			tg.Done(routing.Outcome{Status: 200, TTFB: 40 * time.Millisecond})
		}
		for _, st := range rt.Status() {
			if st.Breaker == "open" {
				return rt
			}
		}
	}
	t.Fatal("no breaker opened")
	return nil
}

// TestAdminProviders checks GET /air/providers: every upstream's state,
// the failing one's breaker open until fail_duration ends, and no secret
// from keys or base URLs.
func TestAdminProviders(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	prev := running.Swap(&App{router: failingRouter(t, now)})
	defer running.Store(prev)

	w := httptest.NewRecorder()
	if err := serveAdmin(w, httptest.NewRequest(http.MethodGet, "/air/providers", nil)); err != nil {
		t.Fatal(err)
	}
	body := w.Body.String()
	for _, secret := range []string{"sk-secret", "hunter2", "sk-in-query"} {
		if strings.Contains(body, secret) {
			t.Errorf("answer shows %q: %s", secret, body)
		}
	}
	var rep admin.ProvidersReport
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Upstreams) != 2 {
		t.Fatalf("%d upstreams, want one per key: %s", len(rep.Upstreams), body)
	}
	open, closed := 0, 0
	for _, u := range rep.Upstreams {
		if u.Provider != "up" || u.Deployment != "up/m-1" || u.BaseURL != "https://up.example/v1" {
			t.Errorf("upstream named %q %q %q", u.Provider, u.Deployment, u.BaseURL)
		}
		switch u.Breaker {
		case "open":
			open++
			if u.Available || u.Reason != "breaker_open" || u.Until == nil || !u.Until.Equal(now.Add(routing.DefaultFailDuration)) {
				t.Errorf("open upstream: %+v", u)
			}
		case "closed":
			closed++
			if !u.Available || u.Until != nil {
				t.Errorf("closed upstream: %+v", u)
			}
		}
		if math.Abs(u.LatencySeconds-0.04) > 1e-9 {
			t.Errorf("latency %v, want the deployment's 40ms", u.LatencySeconds)
		}
	}
	if open != 1 || closed != 1 {
		t.Errorf("%d open and %d closed breakers, want 1 and 1: %s", open, closed, body)
	}

	var out bytes.Buffer
	if err := admin.PrintProviders(&out, rep.Upstreams, now); err != nil {
		t.Fatal(err)
	}
	table := out.String()
	for _, want := range []string{"PROVIDER", "BREAKER", "up/m-1", "https://up.example/v1", "#0", "#1", "breaker_open", "in 30s", "40ms"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if n := strings.Count(table, "\n"); n != 3 {
		t.Errorf("table has %d lines, want a header and 2 rows:\n%s", n, table)
	}
}

// TestAdminProvidersRefusals checks the answers when there is nothing to
// show or the method is wrong.
func TestAdminProvidersRefusals(t *testing.T) {
	prev := running.Swap(nil)
	defer running.Store(prev)
	for i, tc := range []struct {
		app    *App
		method string
		want   int
	}{
		{nil, http.MethodGet, http.StatusServiceUnavailable},
		{&App{router: failingRouter(t, time.Now())}, http.MethodPost, http.StatusMethodNotAllowed},
	} {
		running.Store(tc.app)
		err := serveAdmin(httptest.NewRecorder(), httptest.NewRequest(tc.method, "/air/providers", nil))
		var ae caddy.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != tc.want {
			t.Errorf("Test %d: %v, want %d", i, err, tc.want)
		}
	}
}
