package azure

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	for i, tc := range []struct{ in, want string }{
		{"https://my-res.openai.azure.com", "https://my-res.openai.azure.com"},
		{"https://my-res.openai.azure.com/", "https://my-res.openai.azure.com"},
		{" https://my-res.openai.azure.com/openai/v1/ ", "https://my-res.openai.azure.com"},
		{"https://my-res.cognitiveservices.azure.com/openai", "https://my-res.cognitiveservices.azure.com"},
		{"https://apim.example.com/team-a/", "https://apim.example.com/team-a"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://my-res.openai.azure.com", ""},
		{"my-res.openai.azure.com", ""},
		{"https://user:pw@my-res.openai.azure.com", ""},
		{"https://my-res.openai.azure.com/?api-version=1", ""},
		{"ftp://x", ""},
	} {
		got, err := ParseEndpoint(tc.in)
		if got != tc.want || (err == nil) != (tc.want != "") {
			t.Errorf("Test %d: ParseEndpoint(%q) = %q, %v; want %q", i, tc.in, got, err, tc.want)
		}
	}
}

func TestURLs(t *testing.T) {
	e := "https://my-res.openai.azure.com"
	for i, tc := range []struct{ got, want string }{
		{DeploymentURL(e, "gpt-4o-prod", "chat/completions", "2025-04-01-preview"), e + "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2025-04-01-preview"},
		{DeploymentURL(e, "gpt 4o/x", "chat/completions", ""), e + "/openai/deployments/gpt%204o%2Fx/chat/completions?api-version=" + DefaultAPIVersion},
		{DeploymentURL(e, "emb", "embeddings", "2024-10-21"), e + "/openai/deployments/emb/embeddings?api-version=2024-10-21"},
		{V1URL(e, "chat/completions"), e + "/openai/v1/chat/completions"},
	} {
		if tc.got != tc.want {
			t.Errorf("Test %d: %s, want %s", i, tc.got, tc.want)
		}
	}
	for _, v := range []string{"2024-10-21", "2025-04-01-preview"} {
		if CheckAPIVersion(v) != nil {
			t.Errorf("%s refused", v)
		}
	}
	for _, v := range []string{"", "latest", "2024-10-21&x=1", "v1"} {
		if CheckAPIVersion(v) == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestFront(t *testing.T) {
	var seen []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.String()+" dep="+r.Header.Get("Azure-Deployment")+" key="+r.Header.Get(APIKeyHeader))
		io.WriteString(w, `{"ok":true}`)
	})
	ts := httptest.NewServer(&Front{Key: "k-123", Next: next})
	defer ts.Close()
	e, _ := ParseEndpoint(ts.URL)
	for i, tc := range []struct {
		url, key string
		status   int
		seen     string
	}{
		{DeploymentURL(e, "gpt-4o-prod", "chat/completions", ""), "k-123", 200, "/v1/chat/completions dep=gpt-4o-prod key="},
		{V1URL(e, "chat/completions"), "k-123", 200, "/v1/chat/completions dep= key="},
		{DeploymentURL(e, "d", "chat/completions", ""), "wrong", 401, ""},
		{V1URL(e, "chat/completions"), "", 401, ""},
		{e + "/openai/deployments/d/chat/completions", "k-123", 404, ""},
		{e + "/v1/chat/completions", "k-123", 404, ""},
	} {
		seen = nil
		req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(`{}`))
		if tc.key != "" {
			SetAuth(req.Header, tc.key)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Test %d: %d %s, want %d", i, resp.StatusCode, b, tc.status)
		}
		if tc.seen != "" && (len(seen) != 1 || seen[0] != tc.seen) {
			t.Errorf("Test %d: next saw %q, want %q", i, seen, tc.seen)
		}
		if tc.seen == "" && len(seen) != 0 {
			t.Errorf("Test %d: a refused request reached next", i)
		}
		if tc.status != 200 && !strings.Contains(string(b), `"error"`) {
			t.Errorf("Test %d: error body %s", i, b)
		}
	}
}

func TestEndpoint(t *testing.T) {
	var seen []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.URL.Path+" "+r.Header.Get("Azure-Deployment")+" "+r.Header.Get("Accept"))
	})
	ts := httptest.NewServer(&Front{Key: "k", Next: next})
	defer ts.Close()
	for _, v1 := range []bool{false, true} {
		e := &Endpoint{URL: ts.URL, Key: "k", V1: v1}
		req, err := e.NewRequest(t.Context(), "gpt-4o-prod", true, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("v1 %v: %d", v1, resp.StatusCode)
		}
	}
	if strings.Join(seen, "|") != "/v1/chat/completions gpt-4o-prod text/event-stream|/v1/chat/completions  text/event-stream" {
		t.Errorf("the front saw %q", seen)
	}
}
