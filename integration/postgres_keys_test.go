package integration

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestPostgresKeyChangesReachEveryInstance: two gateway processes on one
// PostgreSQL database both cache a key; a regenerate through A lets the
// new secret work on B at once and the old one until the grace ends,
// then on neither; a second regenerate without grace stops the replaced
// secret on B too; an allow-list set through A refuses B's clients.
func TestPostgresKeyChangesReachEveryInstance(t *testing.T) {
	t.Setenv("AIR_TEST_KEYS_PG_DSN", pgtest.DSN(t))
	dataA, dataB := t.TempDir(), t.TempDir()
	cfgA := quickstartConfig(t, dataA, "")
	a, b, _ := twoInstances(t, cfgA, dataA, dataB, "AIR_TEST_KEYS_PG_DSN")
	defer a.stop()
	defer b.stop()

	old := lastLine(caddyCLI(t, "air", "key", "create", "--user", "rot", "--config", cfgA))
	var keyList []struct {
		ID string `json:"id"`
	}
	if adminGet(t, procAdminAddr, "/air/keys?user=rot", &keyList); len(keyList) != 1 {
		t.Fatalf("keys of rot: %+v", keyList)
	}
	id := keyList[0].ID
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	works := func(p *process, key string) (int, string) {
		return postStatus(t, p.url("/v1/chat/completions"), key, chat)
	}
	for _, p := range []*process{a, b} { // both cache the key
		if status, body := works(p, old); status != http.StatusOK {
			t.Fatalf("before, on port %s: %d %s", p.port, status, body)
		}
	}

	const grace = 3 * time.Second
	start := time.Now()
	second := lastLine(caddyCLI(t, "air", "key", "regenerate", id, "--grace", "3s", "--config", cfgA))
	if !strings.HasPrefix(second, "sk-air-") || second == old {
		t.Fatalf("regenerate printed %q", second)
	}
	for _, p := range []*process{a, b} {
		if status, body := works(p, second); status != http.StatusOK {
			t.Errorf("the new secret on port %s: %d %s", p.port, status, body)
		}
		if status, body := works(p, old); time.Since(start) < grace-time.Second && status != http.StatusOK {
			t.Errorf("the old secret within its grace on port %s: %d %s", p.port, status, body)
		}
	}
	for _, p := range []*process{a, b} {
		eventually(t, 30*time.Second, "the old secret is refused on port "+p.port, func() bool {
			status, body := works(p, old)
			return status == http.StatusUnauthorized && strings.Contains(body, "regenerated")
		})
	}
	if time.Since(start) < grace {
		t.Errorf("the old secret was refused before its grace ended")
	}

	// Without grace: B, which cached the second secret, refuses it at once
	// (within the notification's delivery).
	if status, body := works(b, second); status != http.StatusOK {
		t.Fatalf("second secret on B: %d %s", status, body)
	}
	third := lastLine(caddyCLI(t, "air", "key", "regenerate", id, "--config", cfgA))
	eventually(t, 10*time.Second, "B refuses the second secret", func() bool {
		status, _ := works(b, second)
		return status == http.StatusUnauthorized
	})
	if status, body := works(b, third); status != http.StatusOK {
		t.Errorf("third secret on B: %d %s", status, body)
	}

	// An allow-list set through A's admin API applies on B.
	req, _ := http.NewRequest(http.MethodPatch, "http://"+procAdminAddr+"/air/keys/"+id, bytes.NewReader([]byte(`{"allow_ips":["10.0.0.0/8"]}`)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PATCH allow_ips: %v %v", err, resp)
	}
	resp.Body.Close()
	eventually(t, 10*time.Second, "B refuses the key from 127.0.0.1", func() bool {
		status, body := works(b, third)
		return status == http.StatusForbidden && strings.Contains(body, "ip_not_allowed")
	})
}
