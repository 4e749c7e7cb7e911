package reqscan

import (
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// InspectEmbeddings is openai.InspectEmbeddings.
func InspectEmbeddings(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "input")
}

// InspectModerations is openai.InspectModerations.
func InspectModerations(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "input")
}

// InspectCountTokens is anthropic.InspectCountTokens.
func InspectCountTokens(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return inspectPassThrough(body, maxDepth, "messages", "system", "tools")
}

// inspectPassThrough reads the model and the size of the prompt fields of
// a request that is not generated from (no stream, no max_tokens), in one
// pass (see reqscan.go). The first of prompt is required. The model and
// the prompt fields may each appear once.
func inspectPassThrough(body []byte, maxDepth int, prompt ...string) (dialect.Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in       dialect.Inspected
		model    gjson.Result
		seen     uint32
		required bool
	)
	member := func(key string, v token) bool {
		if key == "model" {
			r.once(&seen, 1, key)
			var ok bool
			model, ok = r.result(v)
			in.Located.Model = dialect.Span{At: v.Start, End: v.Start + len(model.Raw)}
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
		return dialect.Inspected{}, e
	}
	if !required {
		return dialect.Inspected{}, missingOr(false, prompt[0], "")
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return dialect.Inspected{}, e
	}
	return in, nil
}
