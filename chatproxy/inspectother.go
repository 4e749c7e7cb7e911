package chatproxy

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// InspectEmbeddings validates an OpenAI embeddings request body: a JSON
// object, nested at most maxDepth levels (zero means
// jsonlimit.DefaultMaxDepth), with one non-empty string model and an
// input. The size of input estimates the prompt; nothing else is read, so
// encoding_format and the other fields pass untouched.
func InspectEmbeddings(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "input")
}

// InspectCountTokens validates an Anthropic count_tokens request body as
// InspectEmbeddings does, with messages as its required prompt field; the
// size of messages, system and tools estimates the prompt.
func InspectCountTokens(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "messages", "system", "tools")
}

// inspectPassThrough reads the model and the size of the prompt fields of
// a request that is not generated from (no stream, no max_tokens). The
// first of prompt is required.
func inspectPassThrough(body []byte, maxDepth int, prompt ...string) (Inspected, *apierror.Error) {
	var in Inspected
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(maxDepth)); err != nil {
		return in, apierror.InvalidBody(err)
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return in, apierror.InvalidRequest("", "the request body must be a JSON object")
	}
	var model gjson.Result
	models, required := 0, false
	var e *apierror.Error
	root.ForEach(func(k, v gjson.Result) bool {
		switch {
		case k.Str == "model":
			models++
			model = v
			in.model = span{v.Index, v.Index + len(v.Raw)}
		case k.Str == prompt[0]:
			required = v.Type != gjson.Null
			in.PromptBytes += rawLen(v)
		default:
			for _, p := range prompt[1:] {
				if k.Str == p {
					in.PromptBytes += rawLen(v)
				}
			}
		}
		return true
	})
	switch {
	case models > 1:
		return in, apierror.InvalidRequest("model", "model must be given once")
	case !required:
		return in, missingOr(false, prompt[0], "")
	}
	if in.Model, e = modelField(model); e != nil {
		return in, e
	}
	return in, nil
}
