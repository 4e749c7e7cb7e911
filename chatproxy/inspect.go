package chatproxy

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// maxStopWords is the largest number of stop sequences a chat request may
// carry.
const maxStopWords = 4

// Inspected is what the gateway needs to know about a chat request body.
type Inspected struct {
	// Model is the model id the client asked for.
	Model string
	// Stream is true when the client asked for an SSE stream.
	Stream bool
	// IncludeUsage is true when an OpenAI client set
	// stream_options.include_usage to true.
	IncludeUsage bool
	// MaxTokens is max_completion_tokens, else max_tokens, else zero.
	MaxTokens int64
	// PromptBytes is the size of the prompt's text (see promptBytes); a
	// quarter of it estimates the prompt tokens when the upstream reports
	// none.
	PromptBytes int

	// model and streamOptions locate in the body the values PrepareBody
	// may edit, so that it need not look for them again.
	model, streamOptions span
}

// span is the place of a member's value in a request body, zero when the
// member is absent: a value never starts at offset 0, where the body's
// object opens.
type span struct{ at, end int }

// spanOf locates the value v, which gjson read from a body.
func spanOf(v gjson.Result) span { return span{v.Index, v.Index + len(v.Raw)} }

// InspectChat validates an OpenAI chat completions request body and returns
// what the gateway needs from it. Only the documented constraints are
// enforced; unknown fields pass. A repeated "model", "stream" or
// "stream_options" key is rejected: the gateway and the upstream could
// otherwise read different values (e.g. bill one model and run another).
// A body nested deeper than maxDepth levels is rejected before anything
// reads it; zero means jsonlimit.DefaultMaxDepth.
func InspectChat(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	root, e := parseBody(body, maxDepth)
	if e != nil {
		return Inspected{}, e
	}
	var (
		in                     Inspected
		model, messages, tools gjson.Result
		seen                   uint8
		maxTokens, maxCompl    int64
	)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			e = once(&seen, 1, "model")
			model, in.model = v, spanOf(v)
		case "messages":
			messages = v
		case "tools":
			tools = v
		case "stream":
			if e = once(&seen, 2, "stream"); e == nil {
				in.Stream, e = boolField("stream", v)
			}
		case "stream_options":
			e = once(&seen, 4, "stream_options")
			in.streamOptions = spanOf(v)
			in.IncludeUsage = v.Get("include_usage").Type == gjson.True
		case "stop":
			e = checkStop(v)
		case "temperature":
			e = numberIn(v, "temperature", 0, 2, true, false, "[0, 2)")
		case "top_p":
			e = numberIn(v, "top_p", 0, 1, false, true, "(0, 1]")
		case "frequency_penalty", "presence_penalty":
			e = numberIn(v, k.Str, -2, 2, true, true, "[-2, 2]")
		case "max_tokens":
			maxTokens, e = positiveInt("max_tokens", v)
		case "max_completion_tokens":
			maxCompl, e = positiveInt("max_completion_tokens", v)
		}
		return e == nil
	})
	if e != nil {
		return Inspected{}, e
	}
	if in.Model, e = modelField(model); e != nil {
		return Inspected{}, e
	}
	if e := messagesField(messages); e != nil {
		return Inspected{}, e
	}
	in.MaxTokens = maxTokens
	if maxCompl > 0 {
		in.MaxTokens = maxCompl
	}
	in.PromptBytes = promptBytes(messages, gjson.Result{}, tools)
	return in, nil
}

// InspectMessages validates an Anthropic Messages request body: a JSON
// object with a string model, an array of messages and a boolean stream,
// nested at most maxDepth levels (zero means jsonlimit.DefaultMaxDepth).
// Errors are meant to be written with (*apierror.Error).WriteAnthropic.
func InspectMessages(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	root, e := parseBody(body, maxDepth)
	if e != nil {
		return Inspected{}, e
	}
	var (
		in                             Inspected
		model, messages, system, tools gjson.Result
		seen                           uint8
	)
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			e = once(&seen, 1, "model")
			model, in.model = v, spanOf(v)
		case "messages":
			messages = v
		case "system":
			system = v
		case "tools":
			tools = v
		case "stream":
			if e = once(&seen, 2, "stream"); e == nil {
				in.Stream, e = boolField("stream", v)
			}
		case "max_tokens":
			if v.Type == gjson.Number {
				in.MaxTokens = max(v.Int(), 0)
			}
		}
		return e == nil
	})
	if e != nil {
		return Inspected{}, e
	}
	if in.Model, e = modelField(model); e != nil {
		return Inspected{}, e
	}
	if e := messagesField(messages); e != nil {
		return Inspected{}, e
	}
	in.PromptBytes = promptBytes(messages, system, tools)
	return in, nil
}

// parseBody checks that body is one JSON object nested at most maxDepth
// levels (jsonlimit.DefaultMaxDepth when zero).
func parseBody(body []byte, maxDepth int) (gjson.Result, *apierror.Error) {
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(maxDepth)); err != nil {
		return gjson.Result{}, apierror.InvalidBody(err)
	}
	root := gjson.Parse(str(body))
	if !root.IsObject() {
		return gjson.Result{}, apierror.InvalidRequest("", "the request body must be a JSON object")
	}
	return root, nil
}

// once records that the key flagged bit was seen and rejects a repeat.
func once(seen *uint8, bit uint8, key string) *apierror.Error {
	if *seen&bit != 0 {
		return apierror.InvalidRequest(key, fmt.Sprintf("%q appears more than once in the request body", key))
	}
	*seen |= bit
	return nil
}

// modelField returns the model id, which must be a non-empty string. The
// id is copied: the body may be reused after the request.
func modelField(v gjson.Result) (string, *apierror.Error) {
	if v.Type != gjson.String || v.Str == "" {
		return "", missingOr(v, "model", "a non-empty string")
	}
	return strings.Clone(v.Str), nil
}

// missingOr reports a required field as missing, or as not being what.
// messagesField checks that messages is a non-empty array, as both OpenAI
// and Anthropic require.
func messagesField(v gjson.Result) *apierror.Error {
	if !v.IsArray() {
		return missingOr(v, "messages", "an array")
	}
	empty := true
	v.ForEach(func(_, _ gjson.Result) bool { empty = false; return false })
	if empty {
		return apierror.InvalidRequest("messages", "messages must contain at least one message")
	}
	return nil
}

func missingOr(v gjson.Result, param, what string) *apierror.Error {
	if !v.Exists() {
		return apierror.InvalidRequest(param, fmt.Sprintf("you must provide a %s parameter", param))
	}
	return apierror.InvalidRequest(param, fmt.Sprintf("%s must be %s", param, what))
}

// boolField reads an optional boolean; null means false.
func boolField(param string, v gjson.Result) (bool, *apierror.Error) {
	switch v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	}
	return false, apierror.InvalidRequest(param, param+" must be a boolean")
}

// checkStop accepts null, a string, or an array of at most maxStopWords
// strings.
func checkStop(v gjson.Result) *apierror.Error {
	switch {
	case v.Type == gjson.Null || v.Type == gjson.String:
		return nil
	case !v.IsArray():
		return apierror.InvalidRequest("stop", "stop must be a string or an array of strings")
	}
	n, ok := 0, true
	v.ForEach(func(_, w gjson.Result) bool {
		n++
		ok = w.Type == gjson.String
		return ok
	})
	if !ok {
		return apierror.InvalidRequest("stop", "stop must be a string or an array of strings")
	}
	if n > maxStopWords {
		return apierror.InvalidRequest("stop", fmt.Sprintf("stop accepts at most %d stop words, got %d", maxStopWords, n))
	}
	return nil
}

// numberIn accepts null or a number between lo and hi, each bound included
// or not as told; rng describes the range in the error message.
func numberIn(v gjson.Result, param string, lo, hi float64, loIn, hiIn bool, rng string) *apierror.Error {
	if v.Type == gjson.Null {
		return nil
	}
	f := v.Num
	if v.Type != gjson.Number || math.IsNaN(f) ||
		f < lo || (f == lo && !loIn) || f > hi || (f == hi && !hiIn) {
		return apierror.InvalidRequest(param, fmt.Sprintf("%s must be a number in %s, got %s", param, rng, v.Raw))
	}
	return nil
}

// positiveInt accepts null (zero) or a positive integer, which may be
// written with a zero fraction or an exponent.
func positiveInt(param string, v gjson.Result) (int64, *apierror.Error) {
	if v.Type == gjson.Null {
		return 0, nil
	}
	if v.Type == gjson.Number {
		if n, err := strconv.ParseInt(v.Raw, 10, 64); err == nil && n > 0 {
			return n, nil
		}
		if f := v.Num; f >= 1 && f <= 1<<53 && f == math.Trunc(f) {
			return int64(f), nil
		}
	}
	return 0, apierror.InvalidRequest(param, fmt.Sprintf("%s must be a positive integer, got %s", param, v.Raw))
}
