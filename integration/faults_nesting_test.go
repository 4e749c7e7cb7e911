package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFaultDeepNesting posts bodies of 6 MiB (and, in the full form,
// 16 MiB, the default body limit) that only open
// arrays (`[[[…`) or objects (`{"a":{"a":…`) to every endpoint that parses
// JSON, the mock provider's included. Each must be answered with a 400 JSON
// error; none may crash the gateway (a recursive parser runs out of stack).
// A crashed gateway is counted, and started again for the next body.
func TestFaultDeepNesting(t *testing.T) {
	var bodies, crashes int
	reportFault(t, "deep nesting: bodies / crashes", "0 crashes, every answer a 400 JSON error", func() string {
		return fmt.Sprintf("%d bodies / %d crashes", bodies, crashes)
	})
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, "")
	p := startProcess(t, cfg, dataDir)
	key := procCreateKey(t, "nester")

	endpoints := []struct{ path, key string }{
		{"/v1/chat/completions", key},
		{"/v1/messages", key},
		{"/v1/tasks", key},
		{"/mock/v1/chat/completions", "mock-upstream-key"},
		{"/mock/v1/messages", "mock-upstream-key"},
	}
	client := &http.Client{Timeout: time.Minute}
	sizes := []int{6 << 20}
	if faultsFull {
		sizes = append(sizes, 16<<20)
	}
	for _, size := range sizes {
		for _, unit := range []string{"[", `{"a":`} {
			body := bytes.Repeat([]byte(unit), size/len(unit)+1)[:size]
			for _, ep := range endpoints {
				what := fmt.Sprintf("%s of %q to %s", mib(int64(size)), unit, ep.path)
				bodies++
				status, answer, err := postRaw(client, p.url(ep.path), ep.key, body)
				if !answers(p) {
					crashes++
					t.Errorf("%s crashed the gateway: %s", what, deathNote(p))
					p.sigkill()
					p = startProcess(t, cfg, dataDir)
					continue
				}
				if err != nil {
					t.Errorf("%s: %v", what, err)
					continue
				}
				if status != http.StatusBadRequest || !isJSONError(answer) {
					t.Errorf("%s: %d %.200s, want 400 and a JSON error", what, status, answer)
				}
			}
		}
	}
	t.Logf("%d bodies, %d crashes", bodies, crashes)
}

// postRaw posts body as JSON to url with key and returns the answer.
func postRaw(client *http.Client, url, key string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// answers reports whether the gateway process still runs and answers.
func answers(p *process) bool {
	if !p.running() {
		return false
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(p.url("/v1/models"))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return p.running()
}

// isJSONError reports whether body is an OpenAI- or Anthropic-style error:
// a JSON object whose error member has a message.
func isJSONError(body []byte) bool {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error.Message != ""
}

// deathNote says how a gateway that stopped answering ended: the first
// lines of its crash report, or that it still runs but does not answer,
// or how it exited and the end of its log.
func deathNote(p *process) string {
	lines := strings.Split(p.log.String(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "fatal error:") || strings.HasPrefix(l, "panic:") || strings.Contains(l, "stack exceeds") {
			// The line, the signal if any, and the top of the crashing
			// goroutine's stack.
			return strings.Join(lines[i:min(i+6, len(lines))], "\n")
		}
	}
	if p.running() {
		return "it still runs but does not answer"
	}
	return fmt.Sprintf("it exited (%s) without a crash report; its log ends with:\n%s", p.cmd.ProcessState, p.logTail(2<<10))
}
