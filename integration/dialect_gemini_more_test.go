package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// TestDialectGeminiModels: gemini and vertex models are listed as chat
// models, and the endpoint no translation reaches (embeddings) refuses
// them with a 400 naming the ones that do. (Responses reaches them:
// TestDialectResponsesSDKToGoogleModels; token counting is Gemini's:
// TestCountTokensOtherProviders.)
func TestDialectGeminiModels(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "g-models")
	status, _, body := call(t, http.MethodGet, "/v1/models", key, "")
	for _, m := range []string{"gem-flash", "vtx-pro"} {
		if status != 200 || gjson.GetBytes(body, `data.#(id=="`+m+`").owned_by`).Str == "" {
			t.Fatalf("models %d %s", status, body)
		}
	}
	for _, tc := range []struct{ path, body string }{
		{"/v1/embeddings", `{"model":"gem-flash","input":"hi"}`},
		{"/v1/embeddings", `{"model":"vtx-pro","input":"hi"}`},
	} {
		status, _, out := call(t, http.MethodPost, tc.path, key, tc.body, "anthropic-version", "2023-06-01")
		if status != 400 || !strings.Contains(gjson.GetBytes(out, "error.message").Str, "/v1/chat/completions, /v1/messages or /v1/responses") {
			t.Errorf("%s: %d %s", tc.path, status, out)
		}
	}
	if n := gc.gemini.count() + gc.vertex.count(); n != 0 {
		t.Errorf("the fakes got %d requests", n)
	}
}

// TestDialectGeminiFallbacks: a gemini model that fails falls back on
// models of the other protocols, each reached through its own
// translation; the ledger names the model that served.
func TestDialectGeminiFallbacks(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(),
		Models: "model gem-claude gem gemini-2.5-flash {\n\t\t\tfallback mock-claude\n\t\t}\n" +
			"\t\tmodel gem-gpt gem gemini-2.5-flash {\n\t\t\tfallback mock-gpt\n\t\t}"})
	key, _ := createKey(t, "g-fallback")
	status, _, out := call(t, http.MethodPost, "/v1/chat/completions", key,
		`{"model":"gem-claude","messages":[{"role":"user","content":"mock:503 then Claude"}]}`)
	if status != 200 || !strings.Contains(gjson.GetBytes(out, "choices.0.message.content").Str, "then Claude") {
		t.Fatalf("chat → gemini → claude: %d %s", status, out)
	}
	status, _, out = call(t, http.MethodPost, "/v1/messages", key,
		`{"model":"gem-gpt","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"mock:503 then GPT"}]}`, "anthropic-version", "2023-06-01")
	if status != 200 || !strings.Contains(string(out), `"model":"mock-gpt"`) || !strings.Contains(string(out), `"text":" GPT."`) ||
		!strings.Contains(string(out), "event: message_stop") {
		t.Fatalf("messages → gemini → gpt: %d %s", status, out)
	}
	if gc.gemini.count() != 2 {
		t.Errorf("gemini was tried %d times, want 2", gc.gemini.count())
	}
	recs := waitLedger(t, "g-fallback", 2)
	for i, want := range []struct{ served, provider string }{{"mock-claude", "mock-anthropic"}, {"mock-gpt", "mock"}} {
		if r := recs[i]; r.ServedModel != want.served || r.Provider != want.provider || r.Outcome != "ok" || r.Usage.Output == 0 {
			t.Errorf("Test %d: record %+v", i, r)
		}
	}
}
