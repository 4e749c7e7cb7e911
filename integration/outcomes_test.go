package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestOutcomesRecorded checks, through a real Caddy, that every request
// an upstream received leaves one true record, whatever became of it: a
// client that left before the upstream's headers (canceled, billed on the
// prompt estimate), an upstream that hung (timeout, 504, no cost), a stream
// the upstream cut (the client sees the error event; upstream_error), a
// stream whose client hangs up right after [DONE] (ok: the record was
// durable before [DONE] left), and a JSON answer whose upstream fell silent
// after its headers (504, not a truncated 200).
func TestOutcomesRecorded(t *testing.T) {
	received := make(chan struct{}, 8)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Header.Get("X-Air-Request-Id") == "" {
			t.Error("the upstream got no X-Air-Request-Id")
		}
		switch gjson.GetBytes(body, "messages.0.content").Str {
		case "hang":
			received <- struct{}{}
			<-r.Context().Done()
		case "cut":
			sseWrite(w, reasoningStream[:3]...) // and no [DONE]
		case "stream":
			sseWrite(w, reasoningStream...)
		case "silent-json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"x","choices":[`)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
	o := recOptions(up)
	o.Providers = providerBlock("rec", "openai", "timeout 1s\n\t\t\tretries 0", up)
	o.Prices = `{"currency":"USD","models":{"rec-model":{"tiers":[{"input":"1","output":"2"}]}}}`
	startGateway(t, o)
	key, _ := createKey(t, "outcomes")
	body := func(content string, stream bool) string {
		s := `{"model":"rec-model","messages":[{"role":"user","content":"` + content + `"}]`
		if stream {
			s += `,"stream":true`
		}
		return s + "}"
	}

	// The client leaves before any header.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(body("hang", false)))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	go func() { <-received; cancel() }()
	if _, err := http.DefaultClient.Do(req); err == nil {
		t.Fatal("the canceled request got an answer")
	}
	waitLedger(t, "outcomes", 1)

	// The upstream hangs past its timeout.
	if code, _, b := postChat(t, key, body("hang", false)); code != 504 || gjson.GetBytes(b, "error.code").Str != "upstream_timeout" {
		t.Errorf("hung upstream: %d %s", code, b)
	}
	<-received

	// The upstream cuts a stream.
	code, _, b := postChat(t, key, body("cut", true))
	if code != 200 || !strings.Contains(string(b), `data: {"error":{"message":"the upstream provider broke off the response`) || strings.Contains(string(b), "[DONE]") {
		t.Errorf("cut stream: %d %s", code, b)
	}

	// The client hangs up as soon as it has [DONE].
	resp := openStream(t, context.Background(), key, body("stream", true))
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "data: [DONE]" {
	}
	resp.Body.Close()

	// A JSON answer falls silent after its headers.
	if code, _, b := postChat(t, key, body("silent-json", false)); code != 504 || !gjson.ValidBytes(b) {
		t.Errorf("silent JSON answer: %d %s", code, b)
	}

	recs := waitLedger(t, "outcomes", 5)
	want := []struct{ outcome, source string }{
		{"canceled", "estimated"}, {"timeout", "estimated"}, {"upstream_error", "partial"}, {"ok", "reported"}, {"timeout", "partial"},
	}
	for i, w := range want {
		r := recs[i]
		if r.Outcome != w.outcome || r.Source != w.source {
			t.Errorf("record %d: outcome %s, source %s; want %s, %s", i, r.Outcome, r.Source, w.outcome, w.source)
		}
		free := r.Outcome == "timeout"
		if isZero := sameDecimal(r.Cost, "0"); free != isZero || !r.Priced {
			t.Errorf("record %d (%s): cost %s, priced %v", i, r.Outcome, r.Cost, r.Priced)
		}
	}
	if recs[0].Usage.Input == 0 || recs[0].Usage.Output != 0 {
		t.Errorf("canceled record usage %+v, want the prompt estimate", recs[0].Usage)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(ledgerOf(t, "outcomes")); n != 5 {
		t.Errorf("%d records, want exactly 5", n)
	}
}

// TestStorageFullRefusesBillableWork checks, through a real Caddy, that a
// storage below its free-space margin refuses new billable requests with
// 507 storage_full before any upstream sees them, keeps answering reads,
// reports itself in /air/health, and accepts requests again after a reload
// that lowers the margin, without a restart of the store.
func TestStorageFullRefusesBillableWork(t *testing.T) {
	up := cannedUpstream(t)
	o := recOptions(up)
	o.DataDir = dataDir(t)
	o.Extra = "min_free_space 1000000TiB"
	g := startGateway(t, o)
	key, _ := createKey(t, "full")
	code, h, b := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"hi"}]}`)
	if code != 507 || gjson.GetBytes(b, "error.code").Str != "storage_full" || h.Get("Retry-After") == "" {
		t.Errorf("chat on a full storage: %d %v %s", code, h, b)
	}
	if code, _, b := call(t, http.MethodPost, "/v1/tasks", key, `{"model":"mock-image","prompt":"a fox"}`); code != 507 {
		t.Errorf("task on a full storage: %d %s", code, b)
	}
	if up.hits.Load() != 0 {
		t.Errorf("the upstream saw %d requests", up.hits.Load())
	}
	if code, _, _ := call(t, http.MethodGet, "/v1/models", key, ""); code != 200 {
		t.Errorf("models on a full storage: %d", code)
	}
	var hl struct {
		Status  string   `json:"status"`
		Failing []string `json:"failing"`
	}
	resp, err := http.Get("http://" + adminAddr + "/air/health")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&hl)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 503 || hl.Status != "failing" || len(hl.Failing) != 1 || !strings.Contains(hl.Failing[0], "storage") {
		t.Errorf("health on a full storage: %d %+v %v", resp.StatusCode, hl, err)
	}

	o.Extra = "min_free_space 1MiB"
	g.reload(o)
	eventually(t, 5*time.Second, "the storage guard to accept requests", func() bool {
		code, _, _ := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"hi"}]}`)
		return code == 200
	})
	if code := adminJSON(t, http.MethodGet, "/air/health", "", &hl); code != 200 || hl.Status != "ok" {
		t.Errorf("health with room: %d %+v", code, hl)
	}
	waitLedger(t, "full", 1)
}
