package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminLoadRefusesOutOfRange: a config loaded as JSON through the
// admin API's /load is held to the same ranges as a Caddyfile: a
// provider's failure_rate of 2 or a health min_success_rate of 1.5 is
// refused with the Caddyfile's message, and the running config goes on
// serving.
func TestAdminLoadRefusesOutOfRange(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "contract")
	resp, err := http.Get("http://" + adminAddr + "/config/")
	if err != nil {
		t.Fatal(err)
	}
	running, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, tc := range []struct {
		name, want string
		edit       func(air map[string]any)
	}{
		{"failure_rate", "provider mock: failure_rate: want a number in (0, 1], got 2", func(air map[string]any) {
			air["providers"].([]any)[0].(map[string]any)["failure_rate"] = 2
		}},
		{"min_success_rate", "health: min_success_rate must be from 0 to 1", func(air map[string]any) {
			air["health"] = map[string]any{"min_success_rate": 1.5}
		}},
		{"lb_policy", "model mock-gpt: lb_policy: unknown policy", func(air map[string]any) {
			air["models"].([]any)[0].(map[string]any)["lb_policy"] = "fastest"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg map[string]any
			if err := json.Unmarshal(running, &cfg); err != nil {
				t.Fatal(err)
			}
			tc.edit(cfg["apps"].(map[string]any)["air"].(map[string]any))
			b, _ := json.Marshal(cfg)
			req, _ := http.NewRequest(http.MethodPost, "http://"+adminAddr+"/load", bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), tc.want) {
				t.Errorf("POST /load: %d %s; want 400 naming %q", resp.StatusCode, body, tc.want)
			}
			if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("mock-gpt")); status != http.StatusOK {
				t.Errorf("after the refused load: %d %s, want the running config serving", status, body)
			}
		})
	}
}
