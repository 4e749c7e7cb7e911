package responses

import (
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/reqscan"
)

// InspectResponses validates a Responses API create request body: a JSON
// object with a non-empty string model, an input (a string or an array of
// items) unless previous_response_id or a prompt template stands for it,
// and boolean stream and background, nested at most maxDepth levels (zero
// means jsonlimit.DefaultMaxDepth). A repeated member that the gateway
// reads (those below, and in input's items their content and tool calls)
// is refused, as in InspectChat.
func InspectResponses(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return reqscan.InspectResponses(body, maxDepth)
}
