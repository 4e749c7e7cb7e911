package integration

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// TestTeamsAndTags drives teams and tags through the admin API and real
// clients on Badger: a team's models bound its members' requests (403
// model_not_allowed), a spent team refuses every member (429 naming the
// team) but not a user of no team, a removed member is free of it; the
// x-air-tags header and a key's default tags reach the ledger record,
// malformed tags are a 400 in the client's protocol shape; and the usage
// report groups and filters by team and tag.
func TestTeamsAndTags(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	alice, _ := createKey(t, "team-alice")
	bob, _ := createKey(t, "team-bob")
	carol, _ := createScopedKey(t, "solo-carol", `"tags":["batch","env:dev"]`)
	for i, tc := range []struct {
		method, path, body string
		want               int
	}{
		{http.MethodPost, "/air/teams", `{"name":"search","models":["mock-gpt","mock-claude*"]}`, http.StatusCreated},
		{http.MethodPost, "/air/teams", `{"name":"search"}`, http.StatusConflict},
		{http.MethodPost, "/air/teams", `{"name":"a b"}`, http.StatusBadRequest},
		{http.MethodPost, "/air/teams", `{"name":"ads"}`, http.StatusCreated},
		{http.MethodPut, "/air/teams/search/members/team-alice", `{"admin":true}`, http.StatusOK},
		{http.MethodPut, "/air/teams/search/members/team-bob", ``, http.StatusOK},
		{http.MethodPut, "/air/teams/ads/members/team-bob", ``, http.StatusConflict},
		{http.MethodPut, "/air/teams/nope/members/team-bob", ``, http.StatusNotFound},
		{http.MethodDelete, "/air/teams/ads/members/team-bob", ``, http.StatusNotFound},
		{http.MethodPut, "/air/budgets/team/nope", `{"total":"1"}`, http.StatusBadRequest},
		{http.MethodPut, "/air/teams/search/limits", `{"rpm":-1}`, http.StatusBadRequest},
	} {
		if got := adminJSON(t, tc.method, tc.path, tc.body, nil); got != tc.want {
			t.Errorf("Test %d: %s %s: %d, want %d", i, tc.method, tc.path, got, tc.want)
		}
	}

	ctx := context.Background()
	msg := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}
	chat := func(key, model string, opts ...option.RequestOption) error {
		client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
		_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: msg}, opts...)
		return err
	}
	if err := chat(alice, "mock-gpt", option.WithHeader("x-air-tags", " proj:x , env:prod")); err != nil {
		t.Fatalf("a member's request: %v", err)
	}
	var oe *openai.Error
	if err := chat(bob, "mock-reasoner"); !errors.As(err, &oe) || oe.StatusCode != http.StatusForbidden || oe.Code != "model_not_allowed" {
		t.Errorf("a model outside the team's: %v, want 403 model_not_allowed", err)
	}
	if err := chat(carol, "mock-reasoner"); err != nil {
		t.Errorf("a user of no team, with the key's default tags: %v", err)
	}
	// The models list of a member shows the team's models only.
	status, _, body := call(t, http.MethodGet, "/v1/models", bob, "")
	var ids []string
	for _, m := range gjson.GetBytes(body, "data.#.id").Array() {
		ids = append(ids, m.Str)
	}
	if status != http.StatusOK || strings.Join(ids, ",") != "mock-gpt,mock-claude" {
		t.Errorf("/v1/models for a member: %d, lists %v, want the team's mock-gpt and mock-claude", status, ids)
	}
	if st, _, _ := call(t, http.MethodGet, "/v1/models/mock-reasoner", bob, ""); st != http.StatusForbidden {
		t.Errorf("/v1/models/mock-reasoner for a member: %d, want 403", st)
	}
	// Malformed tags: 400 in OpenAI's shape, naming the header, and in
	// Anthropic's on messages; a repeated header too.
	for i, bad := range []string{"a,,b", strings.Repeat("x", 65), "with space", "a,a", "0,1,2,3,4,5,6,7,8,9,10"} {
		err := chat(alice, "mock-gpt", option.WithHeader("x-air-tags", bad))
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || oe.Type != "invalid_request_error" || oe.Param != "x-air-tags" {
			t.Errorf("Test %d: tags %q: %v, want 400 invalid_request_error on x-air-tags", i, bad, err)
		}
	}
	status, _, body = call(t, http.MethodPost, "/v1/messages", alice, `{"model":"mock-claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01", "x-air-tags", "bad tag")
	if status != http.StatusBadRequest || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != "invalid_request_error" {
		t.Errorf("messages with bad tags: %d %s, want 400 in Anthropic's shape", status, body)
	}
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(`{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("x-air-tags", "a")
	req.Header.Add("x-air-tags", "b")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "repeated") {
		t.Errorf("a repeated x-air-tags header: %d %s, want 400", resp.StatusCode, raw)
	}

	if recs := waitLedger(t, "team-alice", 1); recs[0].Team != "search" || !reflect.DeepEqual(recs[0].Tags, []string{"proj:x", "env:prod"}) {
		t.Errorf("alice's record: team %q, tags %q; want search, [proj:x env:prod]", recs[0].Team, recs[0].Tags)
	}
	if recs := waitLedger(t, "solo-carol", 1); recs[0].Team != "" || !reflect.DeepEqual(recs[0].Tags, []string{"batch", "env:dev"}) {
		t.Errorf("carol's record: team %q, tags %q; want none, the key's [batch env:dev]", recs[0].Team, recs[0].Tags)
	}
	var rep struct {
		Rows []struct {
			Team     string `json:"team"`
			Tag      string `json:"tag"`
			Requests int64  `json:"requests"`
		} `json:"rows"`
	}
	if adminJSON(t, http.MethodGet, "/air/usage?by=tag", "", &rep); len(rep.Rows) != 4 || rep.Rows[0].Tag != "batch" || rep.Rows[3].Tag != "proj:x" || rep.Rows[3].Requests != 1 {
		t.Errorf("usage by tag: %+v, want batch, env:dev, env:prod, proj:x", rep.Rows)
	}
	if adminJSON(t, http.MethodGet, "/air/usage?by=team&tag=batch", "", &rep); len(rep.Rows) != 1 || rep.Rows[0].Team != "" || rep.Rows[0].Requests != 1 {
		t.Errorf("usage by team of tag batch: %+v, want carol's one request, of no team", rep.Rows)
	}

	// A spent team refuses its members, and only them.
	if got := adminJSON(t, http.MethodPut, "/air/teams/search/limits", `{"total":"0.000000001"}`, nil); got != http.StatusOK {
		t.Fatalf("setting the team's limit: %d", got)
	}
	if err := chat(bob, "mock-gpt"); !errors.As(err, &oe) || oe.StatusCode != http.StatusTooManyRequests || oe.Code != "insufficient_quota" || !strings.Contains(oe.Message, "your team") {
		t.Errorf("a member of a spent team: %v, want 429 insufficient_quota naming the team", err)
	}
	if err := chat(carol, "mock-gpt"); err != nil {
		t.Errorf("a user of no team while a team is spent: %v", err)
	}
	var team struct {
		Members []struct {
			User  string `json:"user"`
			Admin bool   `json:"admin"`
		} `json:"members"`
	}
	if adminJSON(t, http.MethodDelete, "/air/teams/search/members/team-bob", "", &team); len(team.Members) != 1 || team.Members[0].User != "team-alice" || !team.Members[0].Admin {
		t.Errorf("members after bob left: %+v, want alice, admin", team.Members)
	}
	if err := chat(bob, "mock-reasoner"); err != nil {
		t.Errorf("bob, out of the spent team: %v", err)
	}
}
