package integration

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// refusalEntry is an entry of GET /air/refusals.
type refusalEntry struct {
	ID, User, Endpoint, Model, Code, Message string
	KeyID                                    string `json:"key_id"`
	Status                                   int
}

// refusalsOf reads GET /air/refusals with query q.
func refusalsOf(t *testing.T, q url.Values) []refusalEntry {
	t.Helper()
	var out []refusalEntry
	if st := adminJSON(t, http.MethodGet, "/air/refusals?"+q.Encode(), "", &out); st != http.StatusOK {
		t.Fatalf("GET /air/refusals: %d", st)
	}
	return out
}

// TestRequestIDsClientsCanQuote: the id each official SDK reads from an
// answer (openai-go X-Request-Id, anthropic-sdk-go Request-Id) is the
// gateway's: a served request's names its ledger record, a refused one's
// its entry in GET /air/refusals; the provider's id comes as
// X-Upstream-Request-Id.
func TestRequestIDsClientsCanQuote(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: examplePrices(t)})
	const user = "quoting-user"
	key, keyID := createKey(t, user)
	ctx := context.Background()
	oc := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))

	// A served chat: X-Request-Id is its ledger record's id.
	var resp *http.Response
	if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, option.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	recs := waitLedger(t, user, 1)
	if id := resp.Header.Get("X-Request-Id"); id != recs[0].ID {
		t.Errorf("X-Request-Id %q, ledger record %q", id, recs[0].ID)
	}
	if up := resp.Header.Get("X-Upstream-Request-Id"); up == "" || up == recs[0].ID {
		t.Errorf("the provider's request id is not passed on as X-Upstream-Request-Id: %q", up)
	}

	// Anthropic's SDK reads Request-Id: the same id on /v1/messages.
	ac := anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey(key), aoption.WithMaxRetries(0))
	if _, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "mock-claude", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}, aoption.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	recs = waitLedger(t, user, 2)
	if id := resp.Header.Get("Request-Id"); id == "" || id != resp.Header.Get("X-Request-Id") || (id != recs[0].ID && id != recs[1].ID) {
		t.Errorf("messages: Request-Id %q, X-Request-Id %q, ledger %q %q", id, resp.Header.Get("X-Request-Id"), recs[0].ID, recs[1].ID)
	}

	// Refusals: the id is in the error the SDK returns, and GET
	// /air/refusals finds it; no ledger record is made.
	bad := anthropic.NewClient(aoption.WithBaseURL(baseURL), aoption.WithAPIKey("sk-air-not-a-key-of-this-gateway-000000000000"), aoption.WithMaxRetries(0))
	_, err := bad.Messages.New(ctx, anthropic.MessageNewParams{Model: "mock-claude", MaxTokens: 16,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var aErr *anthropic.Error
	if !errors.As(err, &aErr) || aErr.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(aErr.RequestID, "req_") {
		t.Fatalf("a wrong key: %v", err)
	}
	if got := refusalsOf(t, url.Values{"id": {aErr.RequestID}}); len(got) != 1 || got[0].Status != 401 || got[0].Endpoint != "messages" || got[0].User != "" {
		t.Errorf("the 401 %s in /air/refusals: %+v", aErr.RequestID, got)
	}
	for i, tc := range []struct {
		path, body string
		status     int
		endpoint   string
		model      string
	}{
		{"/v1/chat/completions", `{"model":"no-such-model","messages":[{"role":"user","content":"x"}]}`, 404, "chat_completions", ""},
		{"/v1/chat/completions", `{"model":"mock-gpt","messages":"not a list"}`, 400, "chat_completions", ""},
		{"/v1/no/such/path", `{}`, 404, "other", ""},
	} {
		status, hdr, raw := call(t, http.MethodPost, tc.path, key, tc.body)
		id := hdr.Get("X-Request-Id")
		if status != tc.status || !strings.HasPrefix(id, "req_") {
			t.Errorf("Test %d: %d, X-Request-Id %q: %s", i, status, id, raw)
			continue
		}
		got := refusalsOf(t, url.Values{"id": {id}})
		if len(got) != 1 || got[0].Status != tc.status || got[0].User != user || got[0].KeyID != keyID || got[0].Endpoint != tc.endpoint {
			t.Errorf("Test %d: %s in /air/refusals: %+v", i, id, got)
		}
	}
	if got := refusalsOf(t, url.Values{"user": {user}}); len(got) != 3 {
		t.Errorf("the user's refusals: %d, want 3 (newest first): %+v", len(got), got)
	}
	if recs := ledgerOf(t, user); len(recs) != 2 {
		t.Errorf("refusals left ledger records: %d records, want the 2 served", len(recs))
	}
}
