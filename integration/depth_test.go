package integration

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// tooDeep is the message of a request body nested past the default limit.
const tooDeep = "the request body nests deeper than the limit of 128 levels"

// deepValue is valid JSON nested 100,000 levels deep.
var deepValue = strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)

// deepUpstream answers chat requests with a stream or a body that holds
// deepValue, besides sound usage; Messages streams carry a deep event too.
func deepUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/messages"):
			sseWrite(w,
				"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1,\"x\":"+deepValue+"}}}\n\n",
				"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":9}}\n\n",
				"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		case gjson.GetBytes(body, "stream").Bool():
			sseWrite(w,
				`data: {"id":"d1","choices":[{"index":0,"delta":{"content":`+deepValue+`}}]}`+"\n\n",
				`data: {"id":"d1","choices":[{"index":0,"delta":{"content":"ok"}}]}`+"\n\n",
				`data: {"id":"d1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3}}`+"\n\n",
				"data: [DONE]\n\n")
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"d2","choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":11,"completion_tokens":3},"x":`+deepValue+`}`)
		}
	})
}

// TestDeepJSON posts bodies of 16 MiB of '[', which end a process whose
// validator recurses, to every endpoint that reads JSON, and has upstreams
// answer with JSON nested 100,000 levels deep. The gateway answers 400 to
// the first, forwards the second untouched and bills it, and keeps serving.
func TestDeepJSON(t *testing.T) {
	up := deepUpstream(t)
	startGateway(t, gatewayOptions{
		Providers: providerBlock("deep", "openai", "", up) + "\n\t\t" + providerBlock("deep-anthropic", "anthropic", "", up),
		Models:    "model deep-model deep\n\t\tmodel deep-claude deep-anthropic",
		Extra:     "max_request_body 17MiB",
	})
	key, _ := createKey(t, "deep")
	brackets := strings.Repeat("[", 16<<20)

	for i, tc := range []struct {
		url, key  string
		anthropic bool
	}{
		{baseURL + "/v1/chat/completions", key, false},
		{baseURL + "/v1/messages", key, true},
		{baseURL + "/v1/tasks", key, false},
		{baseURL + "/mock/v1/chat/completions", "mock-upstream-key", false},
		{baseURL + "/mock/v1/messages", "mock-upstream-key", true},
	} {
		status, _, body := callURL(t, http.MethodPost, tc.url, tc.key, brackets, "anthropic-version", "2023-06-01")
		msg, typ := gjson.GetBytes(body, "error.message").String(), gjson.GetBytes(body, "error.type").String()
		if status != http.StatusBadRequest || msg != tooDeep || typ != "invalid_request_error" {
			t.Errorf("Test %d (%s): got %d %.300s, want 400 %q", i, tc.url, status, body, tooDeep)
		}
		if shaped := gjson.GetBytes(body, "type").String() == "error"; shaped != tc.anthropic {
			t.Errorf("Test %d (%s): error in the wrong shape: %.300s", i, tc.url, body)
		}
	}

	// The gateway still answers.
	if status, _, body := postChat(t, key, `{"model":"mock-gpt","messages":[{"role":"user","content":"still there?"}]}`); status != http.StatusOK {
		t.Fatalf("after the deep bodies: %d %s", status, body)
	}

	// A deep stream chunk reaches the client untouched; the usage after it
	// is read.
	status, _, body := postChat(t, key, `{"model":"deep-model","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`{"content":`+deepValue+`}`)) || !bytes.Contains(body, []byte(`"content":"ok"`)) {
		t.Fatalf("deep stream: %d, %d bytes", status, len(body))
	}
	// A deep body reaches the client byte for byte; its usage is estimated.
	status, _, body = postChat(t, key, `{"model":"deep-model","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusOK || !bytes.HasSuffix(body, []byte(`"x":`+deepValue+`}`)) {
		t.Fatalf("deep body: %d, %d bytes", status, len(body))
	}
	// A deep Messages event likewise.
	status, _, body = call(t, http.MethodPost, "/v1/messages", key, `{"model":"deep-claude","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
		"anthropic-version", "2023-06-01")
	if status != http.StatusOK || !bytes.Contains(body, []byte(deepValue)) {
		t.Fatalf("deep messages stream: %d, %d bytes", status, len(body))
	}

	recs := waitLedger(t, "deep", 4)
	sources := map[string]string{}
	for _, r := range recs {
		if r.Model != "mock-gpt" {
			sources[r.Endpoint+" "+r.Source] = r.Outcome
		}
		if r.Outcome != "ok" {
			t.Errorf("ledger record %+v: outcome is not ok", r)
		}
	}
	for _, want := range []string{"chat reported", "chat estimated", "messages reported"} {
		if _, ok := sources[want]; !ok {
			t.Errorf("no %s record in the ledger: %+v", want, recs)
		}
	}
	if status, _, body := postChat(t, key, `{"model":"mock-gpt","messages":[{"role":"user","content":"and now?"}]}`); status != http.StatusOK {
		t.Fatalf("after the deep answers: %d %s", status, body)
	}
}
