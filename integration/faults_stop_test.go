package integration

import (
	"bufio"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGracefulStopFinishesStreams stops a gateway process (SIGTERM) while
// a chat stream and a messages stream are open. Within grace_period each
// must end as it would have without the stop (the last event, no error
// event) and leave exactly one record with outcome ok and the upstream's
// reported usage, read after a restart on the same data. Caddy may stop
// the air app before its HTTP servers have finished their requests: the
// ledger closed under them answered each with ledger_unavailable and left
// only an "interrupted" record of cost zero for work that was delivered.
func TestGracefulStopFinishesStreams(t *testing.T) {
	dataDir := t.TempDir()
	config := quickstartConfig(t, dataDir, "")
	p := startProcess(t, config, dataDir)
	key := procCreateKey(t, "stopper")
	streams := []struct {
		name, path, body, last string
	}{
		{"chat", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,"mock_chunks":15,"mock_chunk_delay_ms":100,"messages":[{"role":"user","content":"stop"}]}`, "data: [DONE]"},
		{"messages", "/v1/messages", `{"model":"mock-claude","max_tokens":256,"stream":true,"mock_chunks":15,"mock_chunk_delay_ms":100,"messages":[{"role":"user","content":"stop"}]}`, "event: message_stop"},
	}
	type outcome struct {
		lines []string
		err   error
	}
	results := make([]chan outcome, len(streams))
	opened := make(chan struct{}, len(streams))
	for i, s := range streams {
		results[i] = make(chan outcome, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, p.url(s.path), strings.NewReader(s.body))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				opened <- struct{}{}
				results[i] <- outcome{err: err}
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var lines []string
			for sc.Scan() {
				if len(lines) == 0 {
					opened <- struct{}{}
				}
				if sc.Text() != "" {
					lines = append(lines, sc.Text())
				}
			}
			if len(lines) == 0 {
				opened <- struct{}{}
			}
			results[i] <- outcome{lines: lines, err: sc.Err()}
		}()
	}
	for range streams {
		<-opened
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		res := <-results[i]
		if res.err != nil {
			t.Errorf("%s stream: %v", s.name, res.err)
			continue
		}
		if n := len(res.lines); n == 0 || res.lines[n-1] != s.last && !(n > 1 && res.lines[n-2] == s.last) {
			t.Errorf("%s stream ended with %q, want %q", s.name, tail(res.lines, 3), s.last)
		}
		for _, l := range res.lines {
			if strings.Contains(l, `"error"`) || l == "event: error" {
				t.Errorf("%s stream carried an error: %s", s.name, l)
			}
		}
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("the gateway did not exit within 20 s of SIGTERM")
	}

	p = startProcess(t, config, dataDir)
	defer p.stop()
	recs := procLedger(t, "stopper")
	if len(recs) != len(streams) {
		t.Fatalf("%d records after the stop, want %d: %+v", len(recs), len(streams), recs)
	}
	for _, rec := range recs {
		if rec.Outcome != "ok" || rec.Source != "reported" {
			t.Errorf("record %s of %s: outcome %q, source %q; want ok, reported", rec.ID, rec.Endpoint, rec.Outcome, rec.Source)
		}
	}
}

// tail returns the last n of lines.
func tail(lines []string, n int) []string {
	return lines[max(len(lines)-n, 0):]
}
