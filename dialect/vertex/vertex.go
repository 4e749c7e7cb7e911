// Package vertex is the dialect of Gemini models on Google Cloud's
// Vertex AI: the bodies, streams and errors are the Gemini API's (this
// package reuses dialect/gemini's codec); what differs is the URL, which
// names the project and region, and the credentials, an OAuth2 bearer
// token from a service account or the application default credentials,
// which cloud.google.com/go/auth fetches and refreshes before expiry.
package vertex

import (
	"strings"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/gemini"
)

// Codec is Vertex AI's dialect.ProviderCodec: Gemini's.
type Codec = gemini.Codec

// Interface guard.
var _ dialect.ProviderCodec = Codec{}

// BaseURL is the Vertex AI endpoint of region, such as
// https://us-central1-aiplatform.googleapis.com; the "global" region's
// is https://aiplatform.googleapis.com.
func BaseURL(region string) string {
	if region == "global" {
		return "https://aiplatform.googleapis.com"
	}
	return "https://" + region + "-aiplatform.googleapis.com"
}

// URL is the generateContent (or, with stream, streamGenerateContent over
// SSE) URL of model in project and region at base, a BaseURL or a test
// server's URL. A model without a publisher is Google's; one given as
// "publishers/{p}/models/{m}" is used as it is.
func URL(base, project, region, model string, stream bool) string {
	if !strings.HasPrefix(model, "publishers/") {
		model = "publishers/google/models/" + model
	}
	return strings.TrimSuffix(base, "/") + "/v1/projects/" + project + "/locations/" + region + "/" + model + gemini.Method(stream)
}
