package gemini

import (
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"
)

// countTokens answers models/{model}:countTokens as Gemini does: its body
// holds contents (Vertex AI's, and one form of Google AI Studio's) or a
// whole generateContentRequest (Google AI Studio's other form), not both;
// the count is the fake's estimate of contents, systemInstruction and
// tools.
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
	n := tokens(g.Get("contents").Raw + g.Get("systemInstruction").Raw + g.Get("tools").Raw)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"totalTokens": n,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": n}}})
}
