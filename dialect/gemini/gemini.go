// Package gemini is the dialect of Google's Gemini API (AI Studio), whose
// generateContent bodies Vertex AI shares: it encodes neutral requests
// as GenerateContentRequest bodies, decodes answers and the
// streamGenerateContent?alt=sse stream into the neutral model, reads
// Google's errors, and builds AI Studio's URLs and API key header.
//
// Gemini's function calls have no ids: the codec makes them from the
// answer's id and the call's position, and sends results back by the
// name of the call they answer, found in the history. A call's
// thoughtSignature (required back by Gemini 3) travels in the tool use
// block's Signature; a signature on a text part travels as a thinking
// block with no text before it.
package gemini

import (
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
)

// Codec is the Gemini protocol's dialect.ProviderCodec. The zero value
// is ready to use.
type Codec struct{}

// Interface guard.
var _ dialect.ProviderCodec = Codec{}

// BaseURL is the Gemini API's endpoint.
const BaseURL = "https://generativelanguage.googleapis.com"

// APIKeyHeader is the header that carries the API key.
const APIKeyHeader = "X-Goog-Api-Key"

// URL is the generateContent (or, with stream, streamGenerateContent
// over SSE) URL of model at base, a BaseURL or a test server's URL. A
// model may be given with or without its "models/" prefix, or as a
// tuned model's "tunedModels/..." name.
func URL(base, model string, stream bool) string {
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	return strings.TrimSuffix(base, "/") + "/v1beta/" + model + Method(stream)
}

// Method is the URL suffix of a call: ":generateContent" or
// ":streamGenerateContent?alt=sse".
func Method(stream bool) string {
	if stream {
		return ":streamGenerateContent?alt=sse"
	}
	return ":generateContent"
}

// SetAuth writes the API key header into h.
func SetAuth(h http.Header, key string) {
	h[APIKeyHeader] = []string{key}
}
