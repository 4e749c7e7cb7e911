package anthropic

import (
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/reqscan"
)

// InspectMessages validates an Anthropic Messages request body: a JSON
// object with a string model, an array of messages and a boolean stream,
// nested at most maxDepth levels (zero means jsonlimit.DefaultMaxDepth).
// Errors are meant to be written with (*apierror.Error).WriteAnthropic.
func InspectMessages(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectMessages(body, maxDepth)
}

// InspectCountTokens validates an Anthropic count_tokens request body as
// InspectEmbeddings does, with messages as its required prompt field; the
// size of messages, system and tools estimates the prompt.
func InspectCountTokens(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectCountTokens(body, maxDepth)
}
