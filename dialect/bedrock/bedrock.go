// Package bedrock is the dialect of Amazon Bedrock Runtime's Converse
// API: it encodes neutral requests as Converse bodies, decodes Converse
// answers and ConverseStream's binary event stream into the neutral
// model, reads Bedrock's errors, builds the runtime URLs and signs
// requests with SigV4.
//
// The gateway sends the request on its own transport: only the SDK's
// signer and credential chain are used, not its bedrockruntime client,
// which ended a stream cut between frames without an error and failed
// streams part-way on a closed connection in a trial against a faithful
// fake.
package bedrock

import (
	"net/url"
	"strings"

	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/caddy-air/caddy-air/dialect"
)

// Codec is the Converse protocol's dialect.ProviderCodec. The zero value
// is ready to use.
type Codec struct{}

// Interface guard.
var _ dialect.ProviderCodec = Codec{}

// StreamContentType is the media type of a ConverseStream answer.
const StreamContentType = "application/vnd.amazon.eventstream"

// BaseURL is the Bedrock Runtime endpoint of region, such as
// https://bedrock-runtime.us-east-1.amazonaws.com.
func BaseURL(region string) string {
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// URL is the Converse (or, with stream, ConverseStream) URL of modelID
// (a model id, inference profile id or ARN) at base, a BaseURL or a test
// server's URL. The model id is escaped as the SDK escapes it, ':' and
// '/' included, so that the signature matches what Bedrock recomputes.
func URL(base, modelID string, stream bool) string {
	op := "/converse"
	if stream {
		op = "/converse-stream"
	}
	return strings.TrimSuffix(base, "/") + "/model/" + httpbinding.EscapePath(modelID, true) + op
}

// ModelFromPath returns the model id and whether the call streams from
// the escaped path of a Converse URL, or ok false if it is none. The
// path may have a prefix (a VPC endpoint's, a proxy's): the model id,
// escaped, holds no '/', so its segment follows the last "/model/".
func ModelFromPath(escapedPath string) (modelID string, stream, ok bool) {
	i := strings.LastIndex(escapedPath, "/model/")
	if i < 0 {
		return "", false, false
	}
	rest := escapedPath[i+len("/model/"):]
	i = strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", false, false
	}
	switch rest[i+1:] {
	case "converse":
	case "converse-stream":
		stream = true
	default:
		return "", false, false
	}
	id, err := url.PathUnescape(rest[:i])
	if err != nil {
		return "", false, false
	}
	return id, stream, true
}
