package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// One client's request that its provider refuses with 403 (mock_status
// stands for OpenAI's "project does not have access to model" or
// DashScope's Model.AccessDenied) goes back to that client, in its
// protocol's shape, and leaves the provider's key in rotation: the other
// users' chat, embeddings and messages go on. Before, the key left
// rotation for 10 minutes and everyone got 503 key_rejected.
func TestForbiddenRequestSparesOtherTenants(t *testing.T) {
	startGateway(t, gatewayOptions{})
	alice, _ := createKey(t, "alice-403")
	bob, _ := createKey(t, "bob-403")

	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", alice,
		`{"model":"mock-gpt","mock_status":403,"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusForbidden || gjson.GetBytes(body, "error.type").Str != "permission_error" {
		t.Fatalf("alice's refused chat: %d %s, want her 403", status, body)
	}
	status, _, body = call(t, http.MethodPost, "/v1/messages", alice,
		`{"model":"mock-claude","max_tokens":8,"mock_status":403,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01")
	if status != http.StatusForbidden || gjson.GetBytes(body, "type").Str != "error" || gjson.GetBytes(body, "error.type").Str != "permission_error" {
		t.Fatalf("alice's refused message: %d %s, want her 403 in Anthropic's shape", status, body)
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`},
		{"/v1/embeddings", `{"model":"mock-embed","input":"hi"}`},
		{"/v1/messages", `{"model":"mock-claude","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		if status, _, body := call(t, http.MethodPost, tc.path, bob, tc.body, "anthropic-version", "2023-06-01"); status != http.StatusOK {
			t.Errorf("bob's %s after alice's 403: %d %s", tc.path, status, body)
		}
	}
}

// A key limited to some models reads only its models' tasks: the user's
// image and video tasks of other models are not in its list and answer
// 404 like unknown tasks, so their media links stay out of its reach.
func TestTaskReadsFollowTheKeyScope(t *testing.T) {
	startGateway(t, gatewayOptions{})
	full, _ := createScopedKey(t, "tasks-scope", `"models":[]`)
	chatOnly, _ := createScopedKey(t, "tasks-scope", `"models":["mock-gpt"]`)
	var ids []string
	for _, body := range []string{`{"model":"mock-image","prompt":"a fox","size":"256x256"}`, `{"model":"mock-video","prompt":"a fox","duration":1}`} {
		status, _, raw := call(t, http.MethodPost, "/v1/tasks", full, body)
		if status != http.StatusOK && status != http.StatusCreated && status != http.StatusAccepted {
			t.Fatalf("creating a task: %d %s", status, raw)
		}
		ids = append(ids, gjson.GetBytes(raw, "id").Str)
	}
	status, _, raw := call(t, http.MethodGet, "/v1/tasks", chatOnly, "")
	if status != http.StatusOK || len(gjson.GetBytes(raw, "data").Array()) != 0 || strings.Contains(string(raw), "/media/") {
		t.Errorf("the mock-gpt key lists: %d %s, want no task", status, raw)
	}
	for _, id := range ids {
		if status, _, raw := call(t, http.MethodGet, "/v1/tasks/"+id, chatOnly, ""); status != http.StatusNotFound || strings.Contains(string(raw), "/media/") {
			t.Errorf("the mock-gpt key reads task %s: %d %s, want 404", id, status, raw)
		}
		if status, _, raw := call(t, http.MethodGet, "/v1/tasks/"+id, full, ""); status != http.StatusOK {
			t.Errorf("the unscoped key reads task %s: %d %s, want 200", id, status, raw)
		}
	}
	if status, _, raw := call(t, http.MethodGet, "/v1/tasks", full, ""); status != http.StatusOK || len(gjson.GetBytes(raw, "data").Array()) != 2 {
		t.Errorf("the unscoped key lists: %d %s, want both tasks", status, raw)
	}
}

// A stored response is reached through the provider: each GET is
// admitted against the key's rpm. Before, with rpm 1, 5 of 5 went through.
// And a response made with a model outside a key's scope cannot be
// continued with it (404, as if it did not exist).
func TestStoredResponsesFollowLimitsAndScope(t *testing.T) {
	startGateway(t, gatewayOptions{})
	full, fullID := createScopedKey(t, "responses-scope", `"models":[]`)
	chatOnly, _ := createScopedKey(t, "responses-scope", `"models":["mock-gpt"]`)
	status, _, raw := call(t, http.MethodPost, "/v1/responses", full, `{"model":"mock-reasoner","input":"think"}`)
	if status != http.StatusOK {
		t.Fatalf("create: %d %s", status, raw)
	}
	id := gjson.GetBytes(raw, "id").Str

	status, _, raw = call(t, http.MethodPost, "/v1/responses", chatOnly, `{"model":"mock-gpt","input":"go on","previous_response_id":"`+id+`"}`)
	if status != http.StatusNotFound || gjson.GetBytes(raw, "error.param").Str != "previous_response_id" {
		t.Errorf("continuing a mock-reasoner response with a mock-gpt key: %d %s, want 404 on previous_response_id", status, raw)
	}

	if status := adminJSON(t, http.MethodPut, "/air/budgets/key/"+fullID, `{"rpm":1}`, nil); status != http.StatusOK {
		t.Fatalf("set rpm: %d", status)
	}
	var ok, limited int
	for range 5 {
		status, hdr, raw := call(t, http.MethodGet, "/v1/responses/"+id, full, "")
		switch {
		case status == http.StatusOK:
			ok++
		case status == http.StatusTooManyRequests && hdr.Get("Retry-After") != "":
			limited++
		default:
			t.Fatalf("GET: %d %s", status, raw)
		}
	}
	if ok != 1 || limited != 4 {
		t.Errorf("with rpm 1: %d of 5 retrievals went through, %d got 429; want 1 and 4", ok, limited)
	}
}
