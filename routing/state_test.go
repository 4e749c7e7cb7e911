package routing

import (
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
)

// TestStatesOutliveARouter: a router built from a new configuration with
// the same States keeps the open breaker and the cooldown of every
// upstream whose provider, upstream model, base URL and key did not
// change, and starts afresh an upstream whose key changed.
func TestStatesOutliveARouter(t *testing.T) {
	kept := map[string]*UpstreamState{}
	states := func(id string) *UpstreamState {
		if kept[id] == nil {
			kept[id] = NewUpstreamState()
		}
		return kept[id]
	}
	clock := fakeclock.New(time.Unix(1_700_000_000, 0))
	build := func(keyB string) *Router {
		a := &providers.Provider{Name: "a", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://a/"}, APIKeys: []string{"ka"}}
		b := &providers.Provider{Name: "b", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{"http://b"}, APIKeys: []string{keyB}}
		m := &providers.Route{Pattern: "m", Deployments: []*providers.Deployment{{Provider: a, UpstreamModel: "ma"}, {Provider: b, UpstreamModel: "mb"}}}
		tbl, err := providers.NewTable([]*providers.Provider{a, b}, []*providers.Route{m})
		if err != nil {
			t.Fatal(err)
		}
		return New(Config{Table: tbl, States: states, Now: clock.Now,
			Options: map[string]Options{"a": {MinRequests: 1, FailDuration: time.Minute}, "b": {MinRequests: 1}}})
	}
	status := func(r *Router) map[string]string {
		out := map[string]string{}
		for _, s := range r.Status() {
			out[s.Deployment] = s.Breaker + "/" + s.Reason
		}
		return out
	}

	old := build("kb")
	for _, u := range old.Upstreams() {
		if !old.acquire(u, clock.Now(), 0) {
			t.Fatalf("%s refused its first attempt", u.Deployment())
		}
		o := Outcome{Status: 500}
		if u.Provider == "b" {
			o = Outcome{Status: 429, RetryAfter: 30 * time.Second}
		}
		(&Target{Upstream: u, r: old}).Done(o)
	}
	want := map[string]string{"a/ma": "open/breaker_open", "b/mb": "closed/cooldown"}
	if got := status(old); got["a/ma"] != want["a/ma"] || got["b/mb"] != want["b/mb"] {
		t.Fatalf("before the reload: %v, want %v", got, want)
	}

	// The same configuration again: both states are kept.
	if got := status(build("kb")); got["a/ma"] != want["a/ma"] || got["b/mb"] != want["b/mb"] {
		t.Errorf("after a reload with the same upstreams: %v, want %v", got, want)
	}
	// b's key changed: b is a new upstream; a is unchanged.
	if got := status(build("kb2")); got["a/ma"] != want["a/ma"] || got["b/mb"] != "closed/" {
		t.Errorf("after a reload with b's key changed: %v, want a open and b fresh", got)
	}
	// A trailing slash of the base URL does not make a new upstream.
	if Identity("a", "ma", "http://a/", "ka") != Identity("a", "ma", "http://a", "ka") ||
		Identity("a", "ma", "http://a", "ka") == Identity("a", "ma", "http://a", "kb") {
		t.Error("Identity: a trailing slash should not matter, a key should")
	}
}
