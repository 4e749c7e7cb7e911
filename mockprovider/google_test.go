package mockprovider

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/vertex"
	"github.com/caddy-air/caddy-air/internal/googletest"
)

// TestGoogleMount: the mock answers the Gemini API below its mount with
// its API key, and Vertex AI with a token its /token endpoint granted
// for the configured service account.
func TestGoogleMount(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	sa := googletest.KeyJSON(t, googletest.NewKey(t), googletest.Account{Email: "mock@p.iam.gserviceaccount.com", Project: "p",
		TokenURI: srv.URL + "/m/token"})
	c := Config{APIKey: "k", VertexServiceAccount: sa, VertexProject: "p", VertexRegion: "r"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	mux.Handle("/m/", New(c))
	ask := func(req *http.Request) (int, string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"Hello Google"}]}]}`

	for i, key := range []string{"k", "wrong"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/m/v1beta/models/gemini-2.5-flash:generateContent", strings.NewReader(body))
		req.Header.Set("X-Goog-Api-Key", key)
		status, out := ask(req)
		if ok := status == 200 && gjson.Get(out, "candidates.0.content.parts.0.text").Str == "Mock reply to: Hello Google"; ok != (i == 0) {
			t.Errorf("gemini with key %q: %d %s", key, status, out)
		}
	}

	tokens, err := vertex.FromServiceAccountJSON(sa, vertex.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := vertex.Endpoint{BaseURL: srv.URL + "/m", Project: "p", Region: "r", Tokens: tokens}
	req, err := e.NewRequest(context.Background(), "gemini-2.5-pro", true, []byte(body))
	if err != nil {
		t.Fatalf("token: %v", err)
	}
	if status, out := ask(req); status != 200 || !strings.Contains(out, `"finishReason":"STOP"`) {
		t.Fatalf("vertex stream: %d %s", status, out)
	}
	req, _ = e.NewRequest(context.Background(), "gemini-2.5-pro", false, []byte(body))
	req.Header.Set("Authorization", "Bearer ya29.forged")
	if status, out := ask(req); status != http.StatusUnauthorized || !strings.Contains(out, "UNAUTHENTICATED") {
		t.Fatalf("a forged token: %d %s", status, out)
	}

	if err := (&Config{VertexServiceAccount: []byte(`{"client_email":"x"}`)}).Validate(); err == nil {
		t.Error("a service account without a key was accepted")
	}
}
