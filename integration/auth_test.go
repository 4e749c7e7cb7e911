package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	startGateway(t, gatewayOptions{})
	secret, id := createKey(t, "alice")

	status, hdr, body := call(t, http.MethodGet, "/v1/models", secret, "")
	if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Fatalf("valid key: status %d, %s", status, body)
	}
	var models struct {
		Object string `json:"object"`
		Data   []struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			OwnedBy string `json:"owned_by"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &models); err != nil || models.Object != "list" || len(models.Data) == 0 {
		t.Fatalf("models list: %v %s", err, body)
	}
	if models.Data[0].ID != "mock-gpt" || models.Data[0].Object != "model" || models.Data[0].OwnedBy != "mock" {
		t.Fatalf("first model: %+v", models.Data[0])
	}

	for i, tc := range []struct {
		header    []string
		wantType  string
		wantInMsg string
	}{
		{nil, "invalid_request_error", "missing API key"},
		{[]string{"Authorization", "Bearer sk-other-123"}, "invalid_request_error", "malformed"},
		{[]string{"Authorization", "Basic dXNlcjpwYXNz"}, "invalid_request_error", "malformed"},
		{[]string{"Authorization", "Bearer " + secret[:len(secret)-1] + "x"}, "invalid_request_error", "invalid API key"},
		{[]string{"x-api-key", "sk-air-" + strings.Repeat("z", 43)}, "invalid_request_error", "invalid API key"},
	} {
		status, _, body := call(t, http.MethodGet, "/v1/models", "", "", tc.header...)
		if status != http.StatusUnauthorized {
			t.Errorf("Test %d: status %d, want 401: %s", i, status, body)
			continue
		}
		e := decodeError(t, body)
		if e.Error.Type != tc.wantType || e.code() != "invalid_api_key" || !strings.Contains(e.Error.Message, tc.wantInMsg) || e.Error.Param != nil {
			t.Errorf("Test %d: error %+v, want type %s and message with %q", i, e.Error, tc.wantType, tc.wantInMsg)
		}
	}

	// The Anthropic SDK sends its key in x-api-key; that works too.
	if status, _, body := call(t, http.MethodGet, "/v1/models", "", "", "x-api-key", secret); status != http.StatusOK {
		t.Fatalf("x-api-key: status %d: %s", status, body)
	}

	// A body must be JSON.
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(`model=x`))
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnsupportedMediaType {
		t.Fatalf("form body: status %d, want 415", resp.StatusCode)
	}

	// Unknown endpoints under /v1 answer with an OpenAI-style 404.
	status, _, body = call(t, http.MethodGet, "/v1/nope", secret, "")
	if status != http.StatusNotFound || decodeError(t, body).code() != "unknown_url" {
		t.Fatalf("unknown endpoint: %d %s", status, body)
	}

	// Revocation takes effect on the next request.
	if status := adminJSON(t, http.MethodDelete, "/air/keys/"+id, "", nil); status != http.StatusOK {
		t.Fatalf("revoke: status %d", status)
	}
	status, _, body = call(t, http.MethodGet, "/v1/models", secret, "")
	if status != http.StatusUnauthorized || !strings.Contains(decodeError(t, body).Error.Message, "revoked") {
		t.Fatalf("revoked key: %d %s", status, body)
	}
}

// TestNoPlaintextKeyOnDisk reads every file of the Badger directory, write-
// ahead log and value log included, after creating keys.
func TestNoPlaintextKeyOnDisk(t *testing.T) {
	g := startGateway(t, gatewayOptions{})
	var secrets []string
	for _, u := range []string{"alice", "bob", "carol"} {
		s, _ := createKey(t, u)
		secrets = append(secrets, s)
	}
	var raw []byte
	err := filepath.Walk(g.dataDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		raw = append(raw, data...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"user":"carol"`) {
		t.Fatal("the key records are not in the files read: the check would prove nothing")
	}
	for _, s := range secrets {
		if strings.Contains(string(raw), s[len("sk-air-"):]) {
			t.Fatalf("the store holds the plaintext of key %s…", s[:12])
		}
	}
}
