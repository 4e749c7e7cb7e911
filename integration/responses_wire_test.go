package integration

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// respWireStream is an upstream Responses stream, as OpenAI sends it.
var respWireStream = []string{
	"event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_w1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"upstream-name\",\"output\":[],\"usage\":null}}\n\n",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"H\\u00e9llo\",\"obfuscation\":\"ab\"}\n\n",
	"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":2,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\" there\"}\n\n",
	"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":3,\"response\":{\"id\":\"resp_w1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"upstream-name\",\"usage\":{\"input_tokens\":1200,\"input_tokens_details\":{\"cached_tokens\":1000},\"output_tokens\":50,\"output_tokens_details\":{\"reasoning_tokens\":20},\"total_tokens\":1250}}}\n\n",
}

// TestResponsesWireExact: the request reaches the upstream with the model
// alias as its only edit, the stream reaches the client byte for byte,
// and the record holds the usage of response.completed, normalized.
func TestResponsesWireExact(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		sseWrite(w, respWireStream...)
	})
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "resp-wire")
	body := `{"model":"rec-alias",  "input":[{"role":"user","content":[{"type":"input_text","text":"h\u00e9llo \"q\""}]}],
 "stream":true,"reasoning":{"effort":"low","summary":"auto"},"vendor_x":{"deep":[1,2.50,{"a":null}]},"store":true}`
	status, h, got := call(t, http.MethodPost, "/v1/responses", key, body)
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d %s", status, got)
	}
	if want := strings.Replace(body, `"rec-alias"`, `"upstream-name"`, 1); string(up.lastBody(t)) != want {
		t.Fatalf("upstream got:\n%s\nwant:\n%s", up.lastBody(t), want)
	}
	if string(got) != strings.Join(respWireStream, "") {
		t.Fatalf("client got:\n%s", got)
	}
	rec := waitLedger(t, "resp-wire", 1)[0]
	u := rec.Usage
	if rec.Endpoint != "responses" || rec.Model != "rec-alias" || rec.Outcome != "ok" || rec.Source != "reported" ||
		u.Input != 200 || u.CacheRead != 1000 || u.Output != 50 || u.Reasoning != 20 {
		t.Fatalf("record %+v", rec)
	}
}

// TestResponsesDisconnectPartial: a client that leaves a stream midway
// leaves one record, partial, with the output of the deltas it was sent.
func TestResponsesDisconnectPartial(t *testing.T) {
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, respWireStream[0])
		for k := 0; k < 2000; k++ {
			_, _ = io.WriteString(w, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"more words \"}\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				close(cancelled)
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "resp-leaver")
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/responses",
		strings.NewReader(`{"model":"rec-model","stream":true,"input":"tell me a long story"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 4 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") && gjson.Get(sc.Text()[6:], "delta").Exists() {
			n++
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatalf("the upstream request was not cancelled after the client left; ledger %+v", ledgerOf(t, "resp-leaver"))
	}
	rec := waitLedger(t, "resp-leaver", 1)[0]
	if rec.Source != "partial" || rec.Outcome != "partial" || rec.Usage.Output < int64(len("more words ")) || rec.Usage.Input == 0 {
		t.Fatalf("ledger %+v, want one partial record with the delivered output", rec)
	}
}
