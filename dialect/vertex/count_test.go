package vertex

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestCount checks Vertex AI's countTokens body: the contents, system
// instruction and tools of the generateContent request, nothing else.
func TestCount(t *testing.T) {
	b, err := Count.Body([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"functionDeclarations":[]}],"generationConfig":{"maxOutputTokens":1}}`), "gemini-2.5-pro")
	if err != nil {
		t.Fatal(err)
	}
	v := gjson.ParseBytes(b)
	if v.Get("contents.0.parts.0.text").Str != "hi" || v.Get("systemInstruction.parts.0.text").Str != "s" || !v.Get("tools").Exists() ||
		v.Get("generationConfig").Exists() || v.Get("model").Exists() {
		t.Errorf("body %s", b)
	}
}
