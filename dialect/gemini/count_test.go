package gemini

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestCount checks Google AI Studio's countTokens exchange: the whole
// generateContentRequest with its model named, the path beside
// generateContent's, and totalTokens read (a missing or negative count
// refused).
func TestCount(t *testing.T) {
	b, err := Count.Body([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1}}`), "gemini-2.5-pro")
	if err != nil || gjson.GetBytes(b, "generateContentRequest.model").Str != "models/gemini-2.5-pro" ||
		gjson.GetBytes(b, "generateContentRequest.contents.0.parts.0.text").Str != "hi" {
		t.Errorf("body %s, %v", b, err)
	}
	if p, ok := Count.Path("/v1beta/models/g:generateContent"); !ok || p != "/v1beta/models/g:countTokens" {
		t.Errorf("path %q %v", p, ok)
	}
	if _, ok := Count.Path("/v1beta/models/g:streamGenerateContent"); ok {
		t.Error("a stream's path taken for generateContent's")
	}
	for body, want := range map[string]int64{`{"totalTokens":31}`: 31, `{"totalTokens":-1}`: -1, `{}`: -1, `{"totalTokens":"3"}`: -1} {
		n, ok := Count.Read([]byte(body))
		if ok != (want >= 0) || ok && n != want {
			t.Errorf("%s: %d %v, want %d", body, n, ok, want)
		}
	}
}
