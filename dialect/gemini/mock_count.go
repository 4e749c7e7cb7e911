package gemini

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// countTokens answers models/{model}:countTokens as Gemini does: its body
// holds contents (Vertex AI's, and one form of Google AI Studio's) or a
// whole generateContentRequest (Google AI Studio's other form), not both;
// the count is the fake's estimate of contents, systemInstruction and
// tools. "mock:throttle" in the last user text is a 429 with a RetryInfo,
// as for generateContent.
func countTokens(w http.ResponseWriter, req gjson.Result) {
	g := req.Get("generateContentRequest")
	if g.Exists() && req.Get("contents").Exists() {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "contents and generateContentRequest are mutually exclusive")
		return
	}
	if !g.Exists() {
		g = req
	}
	if !g.Get("contents.0.parts.0").Exists() {
		WriteError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "* CountTokensRequest.contents: contents is not specified")
		return
	}
	if strings.Contains(lastUserText(g), "mock:throttle") {
		writeGoogleError(w, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "17s"})
		return
	}
	n := tokens(g.Get("contents").Raw + g.Get("systemInstruction").Raw + g.Get("tools").Raw)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"totalTokens": n,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": n}}})
}
