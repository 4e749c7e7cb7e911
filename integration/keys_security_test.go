package integration

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// createKeyWith creates a key from a JSON body and returns its secret.
func createKeyWith(t *testing.T, body string) string {
	t.Helper()
	var out struct {
		Key string `json:"key"`
	}
	if status := adminJSON(t, http.MethodPost, "/air/keys", body, &out); status != http.StatusCreated {
		t.Fatalf("creating %s: %d", body, status)
	}
	return out.Key
}

// TestKeyAllowIPs: a key bound to networks answers only clients in them,
// by Caddy's client_ip: the peer address (a forwarded header is ignored)
// until the server trusts the proxy, then the forwarded address, IPv4
// and IPv6. Refusals are 403 ip_not_allowed in the client's protocol's
// shape, and never reach the upstream.
func TestKeyAllowIPs(t *testing.T) {
	up := cannedUpstream(t)
	o := recOptions(up)
	g := startGateway(t, o)
	local := createKeyWith(t, `{"user":"ipuser","allow_ips":["127.0.0.0/8","::1"]}`)
	tenNet := createKeyWith(t, `{"user":"ipuser","allow_ips":["10.0.0.0/8"]}`)
	v6Net := createKeyWith(t, `{"user":"ipuser","allow_ips":["2001:db8::/32"]}`)
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`
	messages := `{"model":"rec-model","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`
	type probe struct {
		key, xff string
		ok       bool
	}
	run := func(phase string, probes []probe) {
		t.Helper()
		for i, p := range probes {
			var hdr []string
			if p.xff != "" {
				hdr = []string{"X-Forwarded-For", p.xff}
			}
			hits := up.hits.Load()
			status, _, raw := call(t, http.MethodPost, "/v1/chat/completions", p.key, chat, hdr...)
			if p.ok {
				if status != http.StatusOK {
					t.Errorf("%s, Test %d: %d %s, want 200", phase, i, status, raw)
				}
				continue
			}
			e := decodeError(t, raw)
			if status != http.StatusForbidden || e.code() != "ip_not_allowed" || !strings.Contains(string(raw), "may not be used from") {
				t.Errorf("%s, Test %d: %d %s, want 403 ip_not_allowed", phase, i, status, raw)
			}
			if up.hits.Load() != hits {
				t.Errorf("%s, Test %d: a refused request reached the upstream", phase, i)
			}
		}
	}
	run("untrusted peer", []probe{
		{local, "", true},
		{local, "10.1.2.3", true}, // the header is not believed: the peer is 127.0.0.1
		{tenNet, "", false},
		{tenNet, "10.1.2.3", false},
		{v6Net, "2001:db8::5", false},
	})
	// Anthropic's shape on /v1/messages.
	status, _, raw := call(t, http.MethodPost, "/v1/messages", tenNet, messages, "anthropic-version", "2023-06-01")
	if status != http.StatusForbidden || !strings.Contains(string(raw), `"type":"error"`) || !strings.Contains(string(raw), `"permission_error"`) {
		t.Errorf("/v1/messages: %d %s, want 403 in Anthropic's shape", status, raw)
	}
	// IPv6 loopback as the peer (the site is localhost's).
	status, raw = fromIPv6Loopback(t, local, chat)
	if status != http.StatusOK || !strings.Contains(string(raw), "chat.completion") {
		t.Errorf("from ::1: %d %s, want 200", status, raw)
	}
	status, raw = fromIPv6Loopback(t, tenNet, chat)
	if status != http.StatusForbidden || decodeError(t, raw).code() != "ip_not_allowed" || !strings.Contains(string(raw), "::1") {
		t.Errorf("10/8 key from ::1: %d %s, want 403", status, raw)
	}

	o.Global = "servers {\n\t\ttrusted_proxies static 127.0.0.1/32\n\t}"
	g.reload(o)
	run("trusted proxy", []probe{
		{tenNet, "10.1.2.3", true},
		{tenNet, "192.0.2.1", false},
		{v6Net, "2001:db8::5", true},
		{v6Net, "2001:db9::5", false},
		{tenNet, "", false}, // no header: the proxy itself
		{local, "10.1.2.3", false},
	})
}

// TestKeyRegenerateGrace regenerates a key through the CLI with a short
// grace: the old secret works while the grace runs, then is refused with
// a 401 that says it was replaced; the new secret works throughout.
func TestKeyRegenerateGrace(t *testing.T) {
	startGateway(t, recOptions(cannedUpstream(t)))
	old, id := createKey(t, "regen")
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`
	if status, _, raw := postChat(t, old, chat); status != http.StatusOK { // now cached
		t.Fatalf("before: %d %s", status, raw)
	}
	const grace = 3 * time.Second
	start := time.Now()
	outb, err := exec.Command(caddyBin, "air", "keys", "regenerate", id, "--grace", "3s", "--address", adminAddr).CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("regenerate: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	fresh := lines[len(lines)-1]
	if !strings.HasPrefix(fresh, "sk-air-") || fresh == old || !strings.Contains(out, "the old secret works until") {
		t.Fatalf("regenerate printed:\n%s", out)
	}
	status, _, raw := postChat(t, old, chat)
	if time.Since(start) < grace-time.Second && status != http.StatusOK {
		t.Errorf("old secret within the grace: %d %s", status, raw)
	}
	eventually(t, 30*time.Second, "the old secret is refused", func() bool {
		status, _, raw := postChat(t, old, chat)
		if status == http.StatusOK {
			return false
		}
		if status != http.StatusUnauthorized || !strings.Contains(string(raw), "regenerated") {
			t.Fatalf("old secret after the grace: %d %s, want 401 naming the regenerate", status, raw)
		}
		return true
	})
	if time.Since(start) < grace {
		t.Errorf("the old secret was refused %s after the regenerate, before its grace of %s", time.Since(start), grace)
	}
	if status, _, raw := postChat(t, fresh, chat); status != http.StatusOK {
		t.Errorf("new secret: %d %s", status, raw)
	}
	adminJSON(t, http.MethodDelete, "/air/keys/"+id, "", nil)
	if status := adminJSON(t, http.MethodPost, "/air/keys/"+id+"/regenerate", `{"grace":"1h"}`, nil); status != http.StatusConflict {
		t.Errorf("regenerating a revoked key: %d, want 409", status)
	}
	if status := adminJSON(t, http.MethodPost, "/air/keys/key_000000000000/regenerate", `{}`, nil); status != http.StatusNotFound {
		t.Errorf("regenerating an unknown key: %d, want 404", status)
	}
	if status := adminJSON(t, http.MethodPost, fmt.Sprintf("/air/keys/%s/regenerate", id), `{"grace":"-1h"}`, nil); status != http.StatusBadRequest {
		t.Errorf("a negative grace: %d, want 400", status)
	}

	// The CLI creates a key with an allow-list.
	if out, err := exec.Command(caddyBin, "air", "keys", "create", "--user", "cli-ips", "--allow-ips", "10.0.0.0/8,2001:db8::1", "--address", adminAddr).CombinedOutput(); err != nil {
		t.Fatalf("keys create --allow-ips: %v\n%s", err, out)
	}
	var listed []struct {
		AllowIPs []string `json:"allow_ips"`
	}
	adminJSON(t, http.MethodGet, "/air/keys?user=cli-ips", "", &listed)
	if len(listed) != 1 || strings.Join(listed[0].AllowIPs, " ") != "10.0.0.0/8 2001:db8::1/128" {
		t.Errorf("the CLI's key: %+v", listed)
	}
}

// fromIPv6Loopback posts a chat request to the gateway over [::1], for
// the site localhost:9080.
func fromIPv6Loopback(t *testing.T, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://[::1]:9080/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "localhost:9080"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}
