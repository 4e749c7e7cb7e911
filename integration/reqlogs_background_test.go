package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/responses"
	"github.com/tidwall/gjson"
)

// TestRequestLogsBackground: a background response of a key with
// log_requests on is logged under the id of the ledger record that bills
// it, with the create's request and the final response the provider
// returned, whether the poller or the client's retrieval bills it; one of
// a key with logging off leaves no log.
func TestRequestLogsBackground(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: respPrices, Extra: "responses {\n\t\t\tpoll_interval 1s\n\t\t}"})
	onKey, onID := createKey(t, "bg-logged")
	offKey, _ := createKey(t, "bg-unlogged")
	if status := adminJSON(t, http.MethodPatch, "/air/keys/"+onID, `{"log_requests":true}`, nil); status != http.StatusOK {
		t.Fatalf("PATCH log_requests: %d", status)
	}
	off := createBackground(t, respClient(offKey), "mock-gpt", "bg-unlogged-marker", 0)
	offRec := waitLedgerWithin(t, "bg-unlogged", 1, 15*time.Second)[0]

	c := respClient(onKey)
	polled := createBackground(t, c, "mock-gpt", "bg-polled-marker sk-proj-PLANTEDsecret0123456789", 300*time.Millisecond)
	waitLedgerWithin(t, "bg-logged", 1, 15*time.Second)
	retrieved := createBackground(t, c, "mock-gpt", "bg-retrieved-marker", 0)
	done, err := c.Responses.Get(context.Background(), retrieved.ID, responses.ResponseGetParams{})
	if err != nil || done.Status != "completed" {
		t.Fatalf("retrieval: %v %+v", err, done)
	}
	recs := waitLedgerWithin(t, "bg-logged", 2, 15*time.Second)
	for _, r := range recs {
		var l requestLog
		eventually(t, 10*time.Second, "the final response in the log of "+r.ID, func() bool {
			return adminJSON(t, http.MethodGet, "/air/request-logs/"+r.ID, "", &l) == http.StatusOK &&
				gjson.Get(l.Response, "status").String() == "completed"
		})
		id := gjson.Get(l.Response, "id").String()
		marker := map[string]string{polled.ID: "bg-polled-marker", retrieved.ID: "bg-retrieved-marker"}[id]
		if marker == "" || l.RequestID != r.ID || l.KeyID != onID || l.User != "bg-logged" ||
			!strings.Contains(l.Request, marker) || !gjson.Get(l.Request, "background").Bool() ||
			strings.Contains(l.Request, "PLANTED") || gjson.Get(l.Response, "usage.output_tokens").Int() == 0 {
			t.Errorf("log of record %s: %+v", r.ID, l)
		}
	}
	if status := adminJSON(t, http.MethodGet, "/air/request-logs/"+offRec.ID, "", nil); status != http.StatusNotFound {
		t.Errorf("the background response %s of a key with logging off: log status %d, want 404", off.ID, status)
	}
}
