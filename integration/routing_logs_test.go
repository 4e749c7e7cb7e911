package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRoutingAttemptLogsAndSpans: a request whose two attempts on its
// model's deployments fail and whose third is answered by the fallback
// model leaves exactly one log line ("upstream attempt", the handler's
// logger) and one span per attempt, each naming its deployment, number,
// status and request id, and never the upstream key; a request served by
// its first attempt logs it at debug level; an attempt abandoned at its
// provider's try_timeout is one line and one span with result timeout.
// Embeddings and count_tokens
// attempts have spans named after their endpoint.
func TestRoutingAttemptLogsAndSpans(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "attempts.log")
	rc := newOTLPReceiver(t)
	startTracedGateway(t, rc, gatewayOptions{
		Global: fmt.Sprintf(`log attempts {
		output file %s
		format json
		level DEBUG
		include http.handlers.air_chat http.handlers.air_embeddings http.handlers.air_count_tokens
	}`, logFile),
		Site: faultMock("mlog", "fault 1 500") + faultMock("mloghang", "fault 1 hang"),
		Providers: faultProvider("plog", "openai", "mlog", "retries 1\n\t\t\tmin_requests 10") +
			faultProvider("ploghang", "openai", "mloghang", "retries 0\n\t\t\ttry_timeout 300ms"),
		Models: `model fm-log {
			to plog xlog-a
			to plog xlog-b
			fallback mock-gpt
		}
		model fm-loghang {
			to ploghang xhang
			fallback mock-gpt
		}`,
	})
	key, _ := createKey(t, "attempt-logs")
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-log")); status != http.StatusOK {
		t.Fatalf("fm-log: %d %s, want 200 from the fallback", status, body)
	}
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("mock-gpt")); status != http.StatusOK {
		t.Fatalf("mock-gpt: %d %s", status, body)
	}
	recs := waitLedger(t, "attempt-logs", 2)
	ids := map[string]string{} // model → request id
	for _, r := range recs {
		ids[r.Model] = r.ID
	}

	// The log lines of each request, once all have been written.
	lines := func(id string) []map[string]any {
		data, err := os.ReadFile(logFile)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), "mock-upstream-key") {
			t.Error("an attempt log line holds the upstream key")
		}
		var out []map[string]any
		for _, l := range strings.Split(string(data), "\n") {
			var e map[string]any
			if json.Unmarshal([]byte(l), &e) == nil && e["msg"] == "upstream attempt" && e["request_id"] == id {
				out = append(out, e)
			}
		}
		return out
	}
	var got []map[string]any
	eventually(t, 10*time.Second, "three attempt lines of the fallback request", func() bool {
		got = lines(ids["fm-log"])
		return len(got) >= 3
	})
	time.Sleep(200 * time.Millisecond) // a fourth line would be a bug: give it time to show
	if got = lines(ids["fm-log"]); len(got) != 3 {
		t.Fatalf("%d attempt lines for the fallback request, want 3: %v", len(got), got)
	}
	for i, e := range got {
		wantStatus, wantLevel, wantFallback := 500.0, "info", false
		if i == 2 {
			wantStatus, wantFallback = 200, true
		}
		if e["attempt"] != float64(i+1) || e["status"] != wantStatus || e["level"] != wantLevel || e["fallback"] != wantFallback ||
			e["logger"] != "http.handlers.air_chat" || e["operation"] != "chat" || e["model"] != "fm-log" {
			t.Errorf("line %d: %v, want attempt %d, status %v, level %s, fallback %v", i, e, i+1, wantStatus, wantLevel, wantFallback)
		}
		if i < 2 && (!strings.HasPrefix(e["deployment"].(string), "plog/xlog-") || e["upstream"] != "http://localhost:9080/mlog/v1" || e["result"] != "status_5xx") {
			t.Errorf("line %d: %v, want a failed attempt on plog", i, e)
		}
	}
	if got[0]["deployment"] == got[1]["deployment"] {
		t.Errorf("both failed attempts on %v: the second should have gone to the other deployment", got[0]["deployment"])
	}
	if e := got[2]; e["deployment"] != "mock" || e["served_model"] != "mock-gpt" || e["result"] != "ok" {
		t.Errorf("fallback line: %v, want deployment mock serving mock-gpt", e)
	}
	eventually(t, 10*time.Second, "the attempt line of the plain request", func() bool { return len(lines(ids["mock-gpt"])) >= 1 })
	if l := lines(ids["mock-gpt"]); len(l) != 1 || l[0]["level"] != "debug" || l[0]["attempt"] != 1.0 {
		t.Errorf("plain request: %v, want one debug line for its one attempt", l)
	}

	// One span per attempt of the fallback request, with its request id.
	// attemptSpans gives "attempt:value" of the spans named name of the
	// request id, value being the span's attribute key.
	attemptSpans := func(name, id, key string) []string {
		var out []string
		for _, s := range rc.named(name) {
			if attr(s, "air.request_id") == id {
				out = append(out, attr(s, "air.attempt")+":"+attr(s, key))
			}
		}
		return out
	}
	var spans []string
	eventually(t, 20*time.Second, "three attempt spans of the fallback request", func() bool {
		spans = attemptSpans("chat fm-log", ids["fm-log"], "http.response.status_code")
		return len(spans) >= 3
	})
	if strings.Join(spans, " ") != "1:500 2:500 3:200" {
		t.Errorf("attempt spans %v, want 1:500 2:500 3:200", spans)
	}

	// An attempt abandoned at its provider's try_timeout is one line and
	// one span with result timeout, and the request goes on (here to the
	// fallback model).
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, chatBody("fm-loghang")); status != http.StatusOK {
		t.Fatalf("fm-loghang: %d %s, want 200 from the fallback after the try timeout", status, body)
	}
	for _, r := range waitLedger(t, "attempt-logs", 3) {
		ids[r.Model] = r.ID
	}
	eventually(t, 10*time.Second, "two attempt lines of the hanging request", func() bool { return len(lines(ids["fm-loghang"])) >= 2 })
	if l := lines(ids["fm-loghang"]); len(l) != 2 || l[0]["result"] != "timeout" || l[0]["status"] != 0.0 || l[0]["level"] != "info" ||
		l[0]["deployment"] != "ploghang/xhang" || !strings.Contains(fmt.Sprint(l[0]["error"]), "try_timeout") ||
		l[1]["result"] != "ok" || l[1]["served_model"] != "mock-gpt" {
		t.Errorf("hanging request's lines: %v, want a timeout on ploghang/xhang naming try_timeout, then the fallback's ok", l)
	}
	eventually(t, 20*time.Second, "two attempt spans of the hanging request", func() bool {
		spans = attemptSpans("chat fm-loghang", ids["fm-loghang"], "error.type")
		return len(spans) >= 2
	})
	if strings.Join(spans, " ") != "1:timeout 2:" {
		t.Errorf("hanging request's spans %v, want 1:timeout 2: (no error)", spans)
	}

	// Embeddings and count_tokens spans are named after their endpoint.
	if status, _, body := call(t, http.MethodPost, "/v1/embeddings", key, `{"model":"mock-embed","input":"hi"}`); status != http.StatusOK {
		t.Fatalf("embeddings: %d %s", status, body)
	}
	if status, _, body := call(t, http.MethodPost, "/v1/messages/count_tokens", key,
		`{"model":"mock-claude","messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01"); status != http.StatusOK {
		t.Fatalf("count_tokens: %d %s", status, body)
	}
	for _, name := range []string{"embeddings mock-embed", "count_tokens mock-claude"} {
		s := rc.waitSpans(t, name, 1)[0]
		if op := attr(s, "gen_ai.operation.name"); op != strings.Fields(name)[0] {
			t.Errorf("span %q: gen_ai.operation.name %q", name, op)
		}
	}
	if n := len(rc.named("chat mock-embed")) + len(rc.named("messages mock-claude")); n != 0 {
		t.Errorf("%d embeddings or count_tokens spans named after chat or messages", n)
	}
}
