package integration

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// passthroughSite forwards /passthrough/mock/… to the mock provider,
// billed as mock-passthrough, tokens read from the chat usage paths.
const passthroughSite = `handle /passthrough/* {
		air_auth {
			any_body
		}
		route {
			air_passthrough mock /passthrough/mock {
				bill_as mock-passthrough
				usage_input usage.prompt_tokens
				usage_output usage.completion_tokens
			}
			air_not_found
		}
	}`

// TestPassthrough forwards requests under a prefix to the mock with its
// credentials: a POST billed per request plus the tokens at its usage
// paths, a GET billed per request, an upstream 404 passed through at no
// cost; each leaves one record. Without a key nothing is forwarded.
func TestPassthrough(t *testing.T) {
	startGateway(t, gatewayOptions{Site: passthroughSite, Prices: `{"currency": "USD", "models": {
		"mock-passthrough": {"tiers": [{"input": "1", "output": "2"}], "request": "0.001"}}}`})
	key, _ := createKey(t, "passthrough")

	status, _, body := call(t, http.MethodPost, "/passthrough/mock/chat/completions", key,
		`{"model":"mock-gpt","messages":[{"role":"user","content":"hello there"}]}`)
	in, out := gjson.GetBytes(body, "usage.prompt_tokens").Int(), gjson.GetBytes(body, "usage.completion_tokens").Int()
	if status != http.StatusOK || gjson.GetBytes(body, "object").Str != "chat.completion" || in == 0 || out == 0 {
		t.Fatalf("chat through the pass-through: %d %s", status, body)
	}
	rec := waitLedger(t, "passthrough", 1)[0]
	want := perMillion(in, "1").Add(perMillion(out, "2")).Add(decimal.RequireFromString("0.001"))
	if rec.Endpoint != "passthrough" || rec.Model != "mock-passthrough" || rec.Provider != "mock" || rec.Usage.Input != in ||
		rec.Usage.Output != out || rec.Source != "reported" || !sameDecimal(rec.Cost, want.String()) {
		t.Fatalf("record %+v, want %d+%d tokens and a request, %s", rec, in, out, want)
	}

	status, _, body = call(t, http.MethodGet, "/passthrough/mock/models?limit=5", key, "")
	if status != http.StatusOK || gjson.GetBytes(body, "object").Str != "list" {
		t.Fatalf("models through the pass-through: %d %s", status, body)
	}
	status, _, body = call(t, http.MethodGet, "/passthrough/mock/no-such-endpoint", key, "")
	if status != http.StatusNotFound {
		t.Fatalf("unknown upstream path: %d %s", status, body)
	}
	recs := waitLedger(t, "passthrough", 3)
	if !sameDecimal(recs[1].Cost, "0.001") || recs[1].Source != "units" || recs[2].Outcome != "upstream_error" || !sameDecimal(recs[2].Cost, "0") {
		t.Fatalf("records %+v", recs[1:])
	}
	// With any_body, air_auth lets a body that is not JSON through: the
	// provider judges it (the mock's 400), and it is recorded at no cost.
	status, _, body = call(t, http.MethodPost, "/passthrough/mock/chat/completions", key, "plain text", "Content-Type", "text/plain")
	if status != http.StatusBadRequest || gjson.GetBytes(body, "error.message").Str == "" {
		t.Fatalf("a text body: %d %s", status, body)
	}
	if recs := waitLedger(t, "passthrough", 4); recs[3].Outcome != "upstream_error" || !sameDecimal(recs[3].Cost, "0") {
		t.Fatalf("record of the text body %+v", recs[3])
	}

	// No key: 401, nothing forwarded or recorded.
	if status, _, _ := call(t, http.MethodGet, "/passthrough/mock/models", "", ""); status != http.StatusUnauthorized {
		t.Fatalf("without a key: %d", status)
	}
	if recs := ledgerOf(t, "passthrough"); len(recs) != 4 {
		t.Fatalf("%d records, want 4", len(recs))
	}

	// A member of a team: the record carries the team and the request's
	// tags, a model outside the team's is refused, and a spent team
	// refuses the pass-through as every other endpoint.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/air/teams", `{"name":"relay","models":["mock-passthrough"]}`},
		{http.MethodPut, "/air/teams/relay/members/passthrough", ``},
	} {
		if got := adminJSON(t, c.method, c.path, c.body, nil); got/100 != 2 {
			t.Fatalf("%s %s: %d", c.method, c.path, got)
		}
	}
	if status, _, body := call(t, http.MethodGet, "/passthrough/mock/models", key, "", "x-air-tags", "relay,env:test"); status != http.StatusOK {
		t.Fatalf("a team member through the pass-through: %d %s", status, body)
	}
	if rec := waitLedger(t, "passthrough", 5)[4]; rec.Team != "relay" || !reflect.DeepEqual(rec.Tags, []string{"relay", "env:test"}) {
		t.Errorf("a team member's record: team %q, tags %q; want relay, [relay env:test]", rec.Team, rec.Tags)
	}
	if got := adminJSON(t, http.MethodPut, "/air/teams/relay/limits", `{"total":"0.000000001"}`, nil); got != http.StatusOK {
		t.Fatalf("team limits: %d", got)
	}
	if status, _, body := call(t, http.MethodGet, "/passthrough/mock/models", key, ""); status != http.StatusTooManyRequests ||
		!strings.Contains(gjson.GetBytes(body, "error.message").Str, "your team") {
		t.Errorf("a member of a spent team through the pass-through: %d %s, want 429 naming the team", status, body)
	}
	if got := adminJSON(t, http.MethodPut, "/air/teams/relay/models", `{"models":["mock-gpt"]}`, nil); got != http.StatusOK {
		t.Fatalf("team models: %d", got)
	}
	if status, _, body := call(t, http.MethodGet, "/passthrough/mock/models", key, ""); status != http.StatusForbidden {
		t.Errorf("a model outside the team's through the pass-through: %d %s, want 403", status, body)
	}
}
