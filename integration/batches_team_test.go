package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBatchTeam: a batch counts against its user's team. A batch holds
// its estimate against the team's limit while it runs, so that a second
// member's batch is refused (429 naming the team) as TestBatchBudgetHold's
// key's is; a model outside the team's is refused; the lines are charged
// to the team.
func TestBatchTeam(t *testing.T) {
	startGateway(t, gatewayOptions{Extra: "batches {\n\t\t\tpoll_interval 200ms\n\t\t}", Prices: batchPrices})
	key, _ := createKey(t, "team-batcher")
	other, _ := createKey(t, "team-batcher-2")
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/air/teams", `{"name":"batchers","models":["mock-gpt"]}`},
		{http.MethodPut, "/air/teams/batchers/members/team-batcher", ``},
		{http.MethodPut, "/air/teams/batchers/members/team-batcher-2", ``},
		{http.MethodPut, "/air/teams/batchers/limits", `{"total":"10"}`},
	} {
		if got := adminJSON(t, c.method, c.path, c.body, nil); got/100 != 2 {
			t.Fatalf("%s %s: %d", c.method, c.path, got)
		}
	}
	create := func(key, input string) (int, []byte) {
		status, body := upload(t, key, input)
		if status != http.StatusOK {
			t.Fatalf("upload: %d %s", status, body)
		}
		var f struct{ ID string }
		_ = json.Unmarshal(body, &f)
		status, _, raw := call(t, http.MethodPost, "/v1/batches", key, `{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
		return status, raw
	}
	// Four lines that may each write a million tokens: 16 USD at the
	// batch price, more than the team's 10, held while the batch runs.
	big := strings.ReplaceAll(batchLines("mock-gpt", 4), `"max_tokens":50`, `"max_tokens":1000000`)
	if status, raw := create(key, big); status != http.StatusOK {
		t.Fatalf("first batch: %d %s", status, raw)
	}
	status, raw := create(other, big)
	if status != http.StatusTooManyRequests || decodeError(t, raw).code() != "insufficient_quota" || !strings.Contains(string(raw), "team") {
		t.Fatalf("another member's batch while the first runs: %d %s, want 429 insufficient_quota naming the team", status, raw)
	}
	if status, raw := create(key, batchLines("mock-embed", 1)); status == http.StatusOK || !strings.Contains(string(raw), "model_not_allowed") {
		t.Fatalf("a batch of a model outside the team's: %d %s, want model_not_allowed", status, raw)
	}
	for i, r := range waitLedgerWithin(t, "team-batcher", 4, 30*time.Second) {
		if r.Team != "batchers" {
			t.Errorf("line %d's record: team %q, want batchers", i, r.Team)
		}
	}
}
