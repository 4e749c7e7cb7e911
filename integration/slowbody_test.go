package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestChatSlowBodyForwardedExact sends a chat body that trickles in, with
// pauses longer than the 50 ms after which the gateway reads the rest of
// a body in chunks: the upstream receives the client's exact bytes, and
// the client its answer.
func TestChatSlowBodyForwardedExact(t *testing.T) {
	up := cannedUpstream(t)
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "trickle")

	body := []byte(`{"model":"rec-model","messages":[{"role":"user","content":"` +
		strings.Repeat(`slow \"quoted\" words, `, 600) + `"}],"temperature":0.5}`)
	pr, pw := io.Pipe()
	go func() {
		rest := body
		for i := 0; len(rest) > 0; i++ {
			n := min(len(rest), 1000)
			if _, err := pw.Write(rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
			if i%4 == 0 {
				time.Sleep(70 * time.Millisecond)
			}
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/chat/completions", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(answer, []byte(recJSONResponse)) {
		t.Fatalf("status %d: %s", resp.StatusCode, answer)
	}
	if got := up.lastBody(t); !bytes.Equal(got, body) {
		t.Fatalf("the upstream received %d bytes that differ from the client's %d", len(got), len(body))
	}
}
