package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestUpstreamHeadersBounded: a provider that answers with more response
// headers than the gateway takes (64 KiB) is treated as a failed attempt,
// and nothing of its headers reaches the client; Go's transport took up
// to 10 MiB of them and the gateway passed them on, more than clients read
// (curl stops at 300 KB, the Node.js SDKs at 16 KiB).
func TestUpstreamHeadersBounded(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if strings.Contains(string(body), "bloat") {
			for i := range 400 {
				w.Header().Set(fmt.Sprintf("X-Ratelimit-Bloat-%d", i), strings.Repeat("b", 400))
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, recJSONResponse)
	})
	o := recOptions(up)
	o.Providers = providerBlock("rec", "openai", "\t\t\tretries 0", up)
	startGateway(t, o)
	key, _ := createKey(t, "headers")

	status, header, body := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"fine"}]}`)
	if status != http.StatusOK {
		t.Fatalf("ordinary answer: %d %s", status, body)
	}
	status, header, body = postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"bloat"}]}`)
	if status != http.StatusServiceUnavailable || decodeError(t, body).code() != "upstream_unavailable" {
		t.Errorf("160 KiB of upstream headers: %d %s, want 503 upstream_unavailable", status, body)
	}
	if header.Get("X-Ratelimit-Bloat-0") != "" {
		t.Error("the provider's oversized headers reached the client")
	}
}
