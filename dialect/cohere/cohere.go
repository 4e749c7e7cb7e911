// Package cohere is the rerank request shape that Cohere, Jina, LiteLLM
// and New-API share (POST /v1/rerank), spoken by providers of the openai
// protocol: its answers are passed through and billed per search unit or
// token (see caddymodule's rerank usage), so only its request inspection
// lives here.
package cohere

import (
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/reqscan"
)

// InspectRerank validates a rerank request body in the shape Cohere,
// Jina, LiteLLM and New-API share (POST /v1/rerank): a JSON object,
// nested at most maxDepth levels, with one non-empty string model, one
// non-empty string query and one non-empty array of documents (strings,
// or objects with a text). The query and documents' size estimates the
// prompt; top_n, return_documents and the rest pass untouched.
func InspectRerank(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectRerank(body, maxDepth)
}
