package integration

import (
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
