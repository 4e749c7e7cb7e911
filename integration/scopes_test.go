package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
)

// createScopedKey creates a key for user through the admin API with the
// given extra JSON fields (models, limit, expires_in).
func createScopedKey(t *testing.T, user, extra string) (secret, id string) {
	t.Helper()
	var out struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	status := adminJSON(t, http.MethodPost, "/air/keys", fmt.Sprintf(`{"user":%q,"name":"scoped",%s}`, user, extra), &out)
	if status != http.StatusCreated || !strings.HasPrefix(out.Key, "sk-air-") {
		t.Fatalf("creating a scoped key: status %d, %+v", status, out)
	}
	return out.Key, out.ID
}

// TestKeyModelScope uses a key restricted to mock-gpt and mock-claude*:
// allowed models are served (openai-go), every other model is refused
// with 403 model_not_allowed before any upstream call, in OpenAI's shape
// on chat, embeddings, images and tasks and in Anthropic's on messages;
// /v1/models lists only the allowed models.
func TestKeyModelScope(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, id := createScopedKey(t, "scoped", `"models":["mock-gpt","mock-claude*"]`)
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	msg := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}
	if _, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mock-gpt", Messages: msg}); err != nil {
		t.Fatalf("an allowed model: %v", err)
	}
	_, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mock-reasoner", Messages: msg})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusForbidden || oe.Code != "model_not_allowed" || oe.Type != "permission_error" {
		t.Fatalf("chat with a model outside the key's scope: %v, want 403 model_not_allowed", err)
	}
	for i, tc := range []struct {
		path, body string
	}{
		{"/v1/chat/completions", `{"model":"mock-long","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/embeddings", `{"model":"mock-embed","input":"hi"}`},
		{"/v1/images/generations", `{"model":"mock-image","prompt":"a cat"}`},
		{"/v1/tasks", `{"model":"mock-video","prompt":"a cat"}`},
		{"/v1/tasks", `{"model":"gpt-image-1","prompt":"a cat"}`},
	} {
		status, _, body := call(t, http.MethodPost, tc.path, key, tc.body)
		if e := decodeError(t, body); status != http.StatusForbidden || e.code() != "model_not_allowed" {
			t.Errorf("Test %d: %s: %d %s, want 403 model_not_allowed", i, tc.path, status, body)
		}
	}
	status, _, body := call(t, http.MethodPost, "/v1/messages", key, `{"model":"mock-gpt-x","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01")
	if status != http.StatusForbidden || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != "permission_error" {
		t.Errorf("messages: %d %s, want 403 permission_error in Anthropic's shape", status, body)
	}
	// The refused requests left no record: only the allowed one is billed.
	if recs := waitLedger(t, "scoped", 1); recs[0].Model != "mock-gpt" {
		t.Errorf("ledger %+v", recs)
	}
	_, _, body = call(t, http.MethodGet, "/v1/models", key, "")
	var ids []string
	for _, m := range gjson.GetBytes(body, "data.#.id").Array() {
		ids = append(ids, m.Str)
	}
	if strings.Join(ids, ",") != "mock-gpt,mock-claude" {
		t.Errorf("/v1/models for the scoped key lists %v, want mock-gpt and mock-claude", ids)
	}
	if status, _, _ := call(t, http.MethodGet, "/v1/models/mock-embed", key, ""); status != http.StatusForbidden {
		t.Errorf("GET /v1/models/mock-embed: %d, want 403", status)
	}
	// The key list shows the scope, its state and its last use.
	var list []struct {
		ID         string     `json:"id"`
		State      string     `json:"state"`
		Models     []string   `json:"models"`
		LastUsedAt *time.Time `json:"last_used_at"`
	}
	adminJSON(t, http.MethodGet, "/air/keys?user=scoped", "", &list)
	if len(list) != 1 || list[0].ID != id || list[0].State != "active" || len(list[0].Models) != 2 || list[0].LastUsedAt == nil {
		t.Errorf("keys of scoped: %+v", list)
	}
}

// TestKeyExpiryAndLimit checks a key's expiry (401 once past) and its
// spend limit (429 insufficient_quota once spent), both set at creation,
// and that the limit is listed with the budgets.
func TestKeyExpiryAndLimit(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	short, _ := createScopedKey(t, "expiring", `"expires_in":"2s"`)
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hello"}]}`
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", short, chat); status != http.StatusOK {
		t.Fatalf("before expiry: %d %s", status, body)
	}
	time.Sleep(2100 * time.Millisecond)
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", short, chat); status != http.StatusUnauthorized || !strings.Contains(string(body), "expired") {
		t.Errorf("after expiry: %d %s, want 401", status, body)
	}
	limited, id := createScopedKey(t, "limited", `"limit":"0.000000001"`)
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", limited, chat); status != http.StatusOK {
		t.Fatalf("first request under the key's limit: %d %s", status, body)
	}
	waitLedger(t, "limited", 1)
	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", limited, chat)
	if e := decodeError(t, body); status != http.StatusTooManyRequests || e.code() != "insufficient_quota" {
		t.Errorf("over the key's limit: %d %s, want 429 insufficient_quota", status, body)
	}
	var budgets []struct {
		Scope  string `json:"scope"`
		ID     string `json:"id"`
		Limits struct {
			Total string `json:"total"`
		} `json:"limits"`
	}
	adminJSON(t, http.MethodGet, "/air/budgets/", "", &budgets)
	found := false
	for _, b := range budgets {
		found = found || b.Scope == "key" && b.ID == id && b.Limits.Total == "0.000000001"
	}
	if !found {
		t.Errorf("GET /air/budgets/ does not list the key's limit: %+v", budgets)
	}
}

// TestConsoleServicesAdmin checks the admin routes the console's pages
// use: usage by key, the users list, a page of records and its CSV, and
// task paging beyond one page with after and has_more.
func TestConsoleServicesAdmin(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	key, id := createKey(t, "pager")
	for i := 0; i < 3; i++ {
		if status, _, body := call(t, http.MethodPost, "/v1/tasks", key, `{"model":"gpt-image-1","prompt":"a cat"}`); status >= 300 {
			t.Fatalf("image task: %d %s", status, body)
		}
	}
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, body)
	}
	_, _, body := call(t, http.MethodGet, "/v1/tasks?limit=2", key, "")
	if gjson.GetBytes(body, "data.#").Int() != 2 || !gjson.GetBytes(body, "has_more").Bool() {
		t.Fatalf("first page of tasks: %s", body)
	}
	last := gjson.GetBytes(body, "data.1.id").Str
	_, _, body = call(t, http.MethodGet, "/v1/tasks?limit=2&after="+last, key, "")
	if gjson.GetBytes(body, "data.#").Int() != 1 || gjson.GetBytes(body, "has_more").Bool() || gjson.GetBytes(body, "data.0.id").Str == last {
		t.Errorf("second page of tasks: %s", body)
	}
	if status, _, body := call(t, http.MethodGet, "/v1/tasks?after=task_nope", key, ""); status != http.StatusBadRequest || gjson.GetBytes(body, "error.param").Str != "after" {
		t.Errorf("after an unknown task: %d %s", status, body)
	}
	var rep struct {
		Rows []struct {
			KeyID    string `json:"key_id"`
			Requests int64  `json:"requests"`
		} `json:"rows"`
	}
	adminJSON(t, http.MethodGet, "/air/usage?by=key&user=pager", "", &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].KeyID != id || rep.Rows[0].Requests != 4 {
		t.Errorf("usage by key: %+v", rep)
	}
	var users []struct {
		User     string `json:"user"`
		Requests int64  `json:"requests"`
	}
	adminJSON(t, http.MethodGet, "/air/users", "", &users)
	found := false
	for _, u := range users {
		found = found || u.User == "pager" && u.Requests == 4
	}
	if !found {
		t.Errorf("users list %+v has no pager with 4 requests", users)
	}
	var page struct {
		Records []struct {
			ID string `json:"id"`
		} `json:"records"`
		HasMore bool   `json:"has_more"`
		Next    string `json:"next"`
	}
	adminJSON(t, http.MethodGet, "/air/records?user=pager&limit=3", "", &page)
	if len(page.Records) != 3 || !page.HasMore || page.Next == "" {
		t.Fatalf("first page of records: %+v", page)
	}
	adminJSON(t, http.MethodGet, "/air/records?user=pager&limit=3&after="+page.Next, "", &page)
	if len(page.Records) != 1 || page.HasMore {
		t.Errorf("second page of records: %+v", page)
	}
	status, _, csv := callURL(t, http.MethodGet, "http://"+adminAddr+"/air/records?user=pager&format=csv", "", "")
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); status != http.StatusOK || len(lines) != 5 || !strings.HasPrefix(lines[0], "id,time,") {
		t.Errorf("CSV export: %d\n%s", status, csv)
	}

	// Without a user, GET /air/records searches every user's records: the
	// chat request of pager is found among them by model, and by key.
	other, _ := createKey(t, "another")
	if status, _, body := call(t, http.MethodPost, "/v1/chat/completions", other, `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`); status != http.StatusOK {
		t.Fatalf("chat of another user: %d %s", status, body)
	}
	var search struct {
		Records []struct {
			User  string `json:"user"`
			KeyID string `json:"key_id"`
		} `json:"records"`
		HasMore bool `json:"has_more"`
	}
	adminJSON(t, http.MethodGet, "/air/records?model=mock-gpt&outcome=ok", "", &search)
	var got []string
	for _, r := range search.Records {
		got = append(got, r.User)
	}
	if strings.Join(got, ",") != "another,pager" || search.HasMore {
		t.Errorf("search across users for mock-gpt: users %v, has_more %v", got, search.HasMore)
	}
	adminJSON(t, http.MethodGet, "/air/records?key="+id, "", &search)
	if len(search.Records) != 4 || search.Records[0].User != "pager" {
		t.Errorf("search by pager's key: %+v", search)
	}
	status, _, csv = callURL(t, http.MethodGet, "http://"+adminAddr+"/air/records?model=mock-gpt&format=csv", "", "")
	if lines := strings.Split(strings.TrimSpace(string(csv)), "\n"); status != http.StatusOK || len(lines) != 3 {
		t.Errorf("CSV of the search across users: %d\n%s", status, csv)
	}
	var prices struct {
		Currency string `json:"currency"`
		Models   []struct {
			Pattern string `json:"pattern"`
			Tiers   []struct {
				UpTo  int64  `json:"up_to"`
				Input string `json:"input"`
			} `json:"tiers"`
		} `json:"models"`
	}
	adminJSON(t, http.MethodGet, "/air/prices", "", &prices)
	var tiers string
	for _, m := range prices.Models {
		if m.Pattern == "mock-gpt" {
			tiers = fmt.Sprint(m.Tiers)
		}
	}
	if prices.Currency != "USD" || tiers != "[{32000 0.8} {128000 1.2} {0 2.4}]" {
		t.Errorf("GET /air/prices: currency %q, mock-gpt's tiers %s", prices.Currency, tiers)
	}
	adminJSON(t, http.MethodGet, "/air/usage?by=day-key&user=pager", "", &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].KeyID != id || rep.Rows[0].Requests != 4 {
		t.Errorf("usage by day and key: %+v", rep)
	}
}
