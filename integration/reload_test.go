package integration

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestReloadKeepsKeys reloads the config, unchanged and changed, while the
// gateway serves: no lock error, keys stay valid, new settings apply.
func TestReloadKeepsKeys(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	secret, _ := createKey(t, "alice")

	g.reload(g.opts) // the same config
	if status, _, body := call(t, http.MethodGet, "/v1/models", secret, ""); status != http.StatusOK {
		t.Fatalf("after a reload with the same config: %d %s", status, body)
	}

	changed := g.opts
	changed.Models = "model extra-model mock"
	g.reload(changed)
	status, _, body := call(t, http.MethodGet, "/v1/models", secret, "")
	if status != http.StatusOK || !strings.Contains(string(body), `"extra-model"`) {
		t.Fatalf("after a reload with a changed config: %d %s", status, body)
	}
	// Keys created after the reload work too, and so do the old ones.
	second, _ := createKey(t, "bob")
	for _, k := range []string{secret, second} {
		if status, _, body := call(t, http.MethodGet, "/v1/models", k, ""); status != http.StatusOK {
			t.Fatalf("key after reload: %d %s", status, body)
		}
	}
}

// TestReloadWhileStreaming reloads the config while a stream is open: the
// stream finishes (within the grace period) and is billed exactly once.
func TestReloadWhileStreaming(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "reloader")
	resp := openStream(t, context.Background(), key,
		`{"model":"mock-gpt","stream":true,"mock_chunks":10,"mock_chunk_delay_ms":100,"messages":[{"role":"user","content":"slow stream"}]}`)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if !sc.Scan() {
		t.Fatal("no first event")
	}
	changed := g.opts
	changed.Models = "model during-stream mock"
	g.reload(changed)
	done := false
	for sc.Scan() {
		if sc.Text() == "data: [DONE]" {
			done = true
		}
	}
	if !done {
		t.Fatal("the stream was cut by the reload")
	}
	if rec := waitLedger(t, "reloader", 1)[0]; rec.Source != "reported" || rec.Outcome != "ok" {
		t.Fatalf("ledger %+v", rec)
	}
	if status, _, body := call(t, http.MethodGet, "/v1/models", key, ""); status != http.StatusOK || !strings.Contains(string(body), "during-stream") {
		t.Fatalf("after the reload: %d %s", status, body)
	}
}
