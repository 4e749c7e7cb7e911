package reqscan

import (
	"github.com/caddy-air/caddy-air/dialect"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// The OpenAI Responses API (/v1/responses) is proxied like chat: the
// client's bytes pass through with the model alias as the only edit, and
// its answer is tapped by responses.Wire. The response's id and status are
// kept (Result.ResponseID, Result.ResponseStatus) for the caller to map
// the id to the deployment that holds the response.

// InspectResponses is responses.InspectResponses.
func InspectResponses(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in                  dialect.Inspected
		model, prev         gjson.Result
		input, instr, tools int
		hasInput, hasPrompt bool
		seen                uint32
	)
	member := func(key string, v token) bool {
		var ok bool
		var e *apierror.Error
		if bit := responsesMember(key); bit != 0 {
			r.once(&seen, bit, key)
		}
		switch key {
		case "model":
			model, ok = r.result(v)
			in.Located.Model = dialect.Span{At: v.Start, End: v.Start + len(model.Raw)}
		case "stream":
			var s gjson.Result
			if s, ok = r.result(v); ok {
				in.Stream, e = boolField("stream", s)
			}
		case "background":
			var s gjson.Result
			if s, ok = r.result(v); ok {
				in.Background, e = boolField("background", s)
			}
		case "previous_response_id":
			if prev, ok = r.result(v); ok && prev.Type != gjson.Null && (prev.Type != gjson.String || !utf8.ValidString(prev.Raw)) {
				e = apierror.InvalidRequest("previous_response_id", "previous_response_id must be a string")
			}
		case "input":
			hasInput = v.Kind != jsonlimit.Null
			if v.Kind == jsonlimit.BeginArray {
				input, ok = r.messagesBytes(key)
			} else {
				input, ok = r.textLen(v)
			}
		case "instructions":
			instr, ok = r.textLen(v)
		case "tools":
			tools, ok = r.rawLen(v)
		case "prompt", "conversation":
			hasPrompt = hasPrompt || v.Kind != jsonlimit.Null
			_, ok = r.skip(v)
		case "max_output_tokens":
			var n gjson.Result
			if n, ok = r.result(v); ok {
				in.MaxTokens, e = positiveInt(key, n)
			}
		default:
			_, ok = r.skip(v)
		}
		r.refuse(e)
		return ok
	}
	if e := r.object(member); e != nil {
		return dialect.Inspected{}, e
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return dialect.Inspected{}, e
	}
	if prev.Type == gjson.String {
		in.PreviousResponseID = strings.Clone(prev.Str)
	}
	if !hasInput && !hasPrompt && in.PreviousResponseID == "" {
		return dialect.Inspected{}, apierror.InvalidRequest("input", "you must provide an input parameter")
	}
	in.PromptBytes = input + instr + tools
	return in, nil
}

// responsesMember returns the bit of a top-level member of a Responses
// request that the gateway reads, zero for the others.
func responsesMember(key string) uint32 {
	switch key {
	case "model":
		return 1 << 0
	case "stream":
		return 1 << 1
	case "background":
		return 1 << 2
	case "previous_response_id":
		return 1 << 3
	case "input":
		return 1 << 4
	case "instructions":
		return 1 << 5
	case "tools":
		return 1 << 6
	case "prompt":
		return 1 << 7
	case "conversation":
		return 1 << 8
	case "max_output_tokens":
		return 1 << 9
	}
	return 0
}
