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

// InspectModerations validates an OpenAI moderations request body as
// InspectEmbeddings does: a model and an input (a string, an array of
// strings, or an array of text and image parts), whose size estimates the
// prompt.
func InspectModerations(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "input")
}

// InspectCountTokens validates an Anthropic count_tokens request body as
// InspectEmbeddings does, with messages as its required prompt field; the
// size of messages, system and tools estimates the prompt.
func InspectCountTokens(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "messages", "system", "tools")
}

// inspectPassThrough reads the model and the size of the prompt fields of
// a request that is not generated from (no stream, no max_tokens), in one
// pass (see reqscan.go). The first of prompt is required. The model and
// the prompt fields may each appear once.
func inspectPassThrough(body []byte, maxDepth int, prompt ...string) (Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in       Inspected
		model    gjson.Result
		seen     uint32
		required bool
	)
	member := func(key string, v token) bool {
		if key == "model" {
			r.once(&seen, 1, key)
			var ok bool
			model, ok = r.result(v)
			in.model = span{v.Start, v.Start + len(model.Raw)}
			return ok
		}
		for i, p := range prompt {
			if key != p {
				continue
			}
			r.once(&seen, 2<<i, key)
			if i == 0 {
				required = v.Kind != jsonlimit.Null
			}
			n, ok := r.rawLen(v)
			in.PromptBytes += n
			return ok
		}
		_, ok := r.skip(v)
		return ok
	}
	if e := r.object(member); e != nil {
		return Inspected{}, e
	}
	if !required {
		return Inspected{}, missingOr(false, prompt[0], "")
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return Inspected{}, e
	}
	return in, nil
}
