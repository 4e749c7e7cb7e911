package gemini

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestMockCountTokens: the fake counts contents (Vertex AI's form, and
// one of AI Studio's) or a whole generateContentRequest (AI Studio's
// other form), refuses both at once and a request without contents, and
// checks the key as its other methods do.
func TestMockCountTokens(t *testing.T) {
	ts := httptest.NewServer(&Server{APIKey: testKey})
	defer ts.Close()
	contents := `{"contents":[{"role":"user","parts":[{"text":"How many tokens is this sentence?"}]}]}`
	for i, tc := range []struct {
		key, body string
		status    int
		tokens    int64
	}{
		{testKey, contents, 200, tokens(gjson.Get(contents, "contents").Raw)},
		{testKey, `{"generateContentRequest":{"model":"models/gemini-2.5-flash",` + contents[1:] + `}`, 200, tokens(gjson.Get(contents, "contents").Raw)},
		{testKey, `{"generateContentRequest":` + contents + `,` + contents[1:], 400, 0},
		{testKey, `{"contents":[]}`, 400, 0},
		{testKey, strings.Replace(contents, "How many tokens is this sentence?", "mock:throttle", 1), 429, 0},
		{"wrong", contents, 400, 0}, // Google answers a bad key with 400 API_KEY_INVALID
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1beta/models/gemini-2.5-flash:countTokens", strings.NewReader(tc.body))
		req.Header.Set("X-Goog-Api-Key", tc.key)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("Test %d: %d %s", i, resp.StatusCode, b)
		}
		if tc.status == 200 && (gjson.GetBytes(b, "totalTokens").Int() != tc.tokens || tc.tokens == 0) {
			t.Errorf("Test %d: %s, want %d tokens", i, b, tc.tokens)
		}
		if tc.status != 200 && gjson.GetBytes(b, "error.status").Str == "" {
			t.Errorf("Test %d: error %s", i, b)
		}
	}
}
