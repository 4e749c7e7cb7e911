package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// healthAnswer is the health report as clients read it.
type healthAnswer struct {
	Status  string   `json:"status"`
	Failing []string `json:"failing"`
	Checks  []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Reason string `json:"reason"`
	} `json:"checks"`
	Storage struct {
		Dir      string `json:"dir"`
		Writable bool   `json:"writable"`
	} `json:"storage"`
	Providers []struct {
		Name     string `json:"name"`
		Attempts int64  `json:"attempts"`
		Failures int64  `json:"failures"`
	} `json:"providers"`
}

// getHealth reads a health report at url.
func getHealth(t *testing.T, url string) (int, healthAnswer, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var h healthAnswer
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatalf("health at %s: %v: %s", url, err, raw)
	}
	return resp.StatusCode, h, string(raw)
}

// check returns the named check of h.
func (h healthAnswer) check(name string) (ok, found bool, reason string) {
	for _, c := range h.Checks {
		if c.Name == name {
			return c.OK, true, c.Reason
		}
	}
	return false, false, ""
}

// TestAirHealth checks the air_health site handler and /air/health: 200
// with every check passing; 503 naming the provider once it failed all
// of its recent attempts; 200 again once it answers; 503 naming the
// storage when the free space is below the margin, without the storage
// directory in the site's answer; and 200 after a reload that lowers it.
func TestAirHealth(t *testing.T) {
	var failing atomic.Bool
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Content-Type", "application/json")
		if failing.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
			return
		}
		_, _ = io.WriteString(w, recJSONResponse)
	})
	o := gatewayOptions{
		// The breaker judges no sooner than after 20 attempts: this test
		// is about health, which must not wait for a breaker.
		Providers: providerBlock("flaky", "openai", "\t\t\tretries 0\n\t\t\tmin_requests 20", up),
		Models:    "model flaky-model flaky",
		Extra:     "health {\n\t\t\tmin_attempts 3\n\t\t\tmin_success_rate 0.5\n\t\t}",
		Site:      "handle /healthz {\n\t\tair_health\n\t}\n\thandle /livez {\n\t\tair_health live\n\t}",
	}
	o.DataDir = dataDir(t)
	g := startGateway(t, o)
	// Three users: a provider fails the readiness check only once its
	// failures came from min_clients (default 3) of them.
	var userKeys []string
	for _, u := range []string{"health", "health-b", "health-c"} {
		k, _ := createKey(t, u)
		userKeys = append(userKeys, k)
	}
	site := baseURL + "/healthz"
	chatAs := func(key string) int {
		code, _, _ := postChat(t, key, `{"model":"flaky-model","messages":[{"role":"user","content":"hi"}]}`)
		return code
	}
	chat := func() int { return chatAs(userKeys[0]) }

	code, h, raw := getHealth(t, site)
	if code != 200 || h.Status != "ok" || len(h.Failing) != 0 || !h.Storage.Writable {
		t.Fatalf("healthy: %d %s", code, raw)
	}
	for _, name := range []string{"store_writable", "storage_space", "ledger", "provider:flaky", "provider:mock"} {
		if ok, found, _ := h.check(name); !ok || !found {
			t.Errorf("healthy: check %s ok=%v found=%v: %s", name, ok, found, raw)
		}
	}
	if h.Storage.Dir != "" || strings.Contains(raw, g.dataDir) {
		t.Errorf("the site's health answer shows the storage directory: %s", raw)
	}

	failing.Store(true)
	// One client whose every request fails is no evidence against the
	// provider: health stays ok (a client sending only requests the
	// provider fails on cannot pull the gateway out of rotation).
	for range 6 {
		if c := chat(); c != 500 {
			t.Fatalf("chat on a failing upstream: %d", c)
		}
	}
	if code, h, raw = getHealth(t, site); code != 200 || h.Status != "ok" {
		t.Errorf("one client's 6 failed requests failed the health check: %d %s", code, raw)
	}
	// The same failures for three clients are.
	for _, k := range userKeys[1:] {
		if c := chatAs(k); c != 500 {
			t.Fatalf("chat on a failing upstream: %d", c)
		}
	}
	code, h, raw = getHealth(t, site)
	ok, _, reason := h.check("provider:flaky")
	if code != 503 || h.Status != "failing" || ok || !strings.Contains(reason, "8 of its last 8 attempts failed") ||
		!strings.Contains(reason, "for 3 or more clients") || len(h.Failing) != 1 || !strings.HasPrefix(h.Failing[0], "provider:flaky: ") {
		t.Errorf("a provider failing every attempt of three clients: %d %s", code, raw)
	}
	// Liveness is not readiness: a failing provider is no reason to
	// restart the gateway.
	if code, lh, raw := getHealth(t, baseURL+"/livez"); code != 200 || lh.Status != "ok" {
		t.Errorf("/livez with a failing provider: %d %s", code, raw)
	}
	if code, ah, raw := getHealth(t, "http://"+adminAddr+"/air/health"); code != 503 || len(ah.Failing) != 1 || ah.Storage.Dir != g.dataDir {
		t.Errorf("/air/health with a failing provider: %d %s", code, raw)
	}

	failing.Store(false)
	for range 8 {
		if c := chat(); c != 200 {
			t.Fatalf("chat on a recovered upstream: %d", c)
		}
	}
	if code, h, raw = getHealth(t, site); code != 200 || h.Status != "ok" {
		t.Errorf("after the provider recovered (8 of 16 attempts succeeded): %d %s", code, raw)
	}
	for _, p := range h.Providers {
		if p.Name == "flaky" && (p.Attempts != 16 || p.Failures != 8) {
			t.Errorf("flaky's attempts %+v, want 16 with 8 failures", p)
		}
	}

	o.Extra += "\n\t\tmin_free_space 1000000TiB"
	g.reload(o)
	eventually(t, 10*time.Second, "the health check to see the storage below its margin", func() bool {
		code, h, raw = getHealth(t, site)
		return code == 503
	})
	if ok, _, reason := h.check("storage_space"); ok || !strings.Contains(reason, "below the margin") ||
		len(h.Failing) != 1 || strings.Contains(raw, g.dataDir) {
		t.Errorf("storage below its margin: %s", raw)
	}
	if code, _, raw := getHealth(t, baseURL+"/livez"); code != 200 {
		t.Errorf("/livez with the storage below its margin: %d %s", code, raw)
	}

	o.Extra = strings.Replace(o.Extra, "1000000TiB", "1MiB", 1)
	g.reload(o)
	eventually(t, 10*time.Second, "the health check to pass again", func() bool {
		code, _, _ = getHealth(t, site)
		return code == 200
	})
	if code, _, raw := getHealth(t, "http://"+adminAddr+"/air/health"); code != 200 {
		t.Errorf("/air/health after the reload: %d %s", code, raw)
	}
}
