package reqscan

import (
	"fmt"
	"github.com/caddy-air/caddy-air/dialect"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// maxStopWords is the largest number of stop sequences a chat request may
// carry.
const maxStopWords = 4

// InspectChat is openai.InspectChat.
func InspectChat(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return inspect(body, maxDepth, true)
}

// InspectMessages is anthropic.InspectMessages.
func InspectMessages(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	return inspect(body, maxDepth, false)
}

// inspect reads a request body in one pass: a chat completions one when
// chat is set, else a Messages one.
func inspect(body []byte, maxDepth int, chat bool) (dialect.Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in                  dialect.Inspected
		model               gjson.Result
		messages            jsonlimit.Kind // of the last "messages"; Done when absent
		msgs, system, tools int            // prompt bytes of each
		seen                uint32
		maxTokens, maxCompl int64
	)
	member := func(key string, v token) bool {
		var ok bool
		var e *apierror.Error
		if bit := topMember(key, chat); bit != 0 {
			r.once(&seen, bit, key)
		}
		switch {
		case key == "model":
			model, ok = r.result(v)
			in.Located.Model = dialect.Span{At: v.Start, End: v.Start + len(model.Raw)}
		case key == "messages":
			messages = v.Kind
			if v.Kind != jsonlimit.BeginArray {
				_, ok = r.skip(v)
				break
			}
			msgs, ok = r.messagesBytes(key)
		case key == "tools":
			tools, ok = r.rawLen(v)
		case key == "stream":
			var s gjson.Result
			if s, ok = r.result(v); ok {
				in.Stream, e = boolField("stream", s)
			}
		case key == "system" && !chat:
			system, ok = r.contentBytes(key, v)
		case key == "max_tokens" && !chat:
			var n gjson.Result
			if n, ok = r.result(v); n.Type == gjson.Number {
				in.MaxTokens = max(n.Int(), 0)
			}
		case !chat:
			_, ok = r.skip(v)
		case key == "stream_options":
			in.Located.StreamOptions, in.Located.IncludeUsage, in.IncludeUsage, ok = r.streamOptions(v)
		case key == "stop":
			ok = r.stop(v)
		case key == "temperature", key == "top_p", key == "frequency_penalty", key == "presence_penalty",
			key == "max_tokens", key == "max_completion_tokens":
			var n gjson.Result
			if n, ok = r.result(v); ok {
				e = numberMember(key, n, &maxTokens, &maxCompl)
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
	if messages != jsonlimit.BeginArray {
		return dialect.Inspected{}, missingOr(messages != jsonlimit.Done, "messages", "an array")
	}
	if msgs == 0 { // every message counts dialect.MessageOverhead
		return dialect.Inspected{}, apierror.InvalidRequest("messages", "messages must contain at least one message")
	}
	if chat {
		in.MaxTokens = maxTokens
		if maxCompl > 0 {
			in.MaxTokens = maxCompl
		}
	}
	in.PromptBytes = system + tools + msgs
	return in, nil
}

// numberMember checks one of the numeric members of a chat request,
// recording max_tokens and max_completion_tokens.
func numberMember(key string, v gjson.Result, maxTokens, maxCompl *int64) *apierror.Error {
	var e *apierror.Error
	switch key {
	case "temperature":
		e = numberIn(v, "temperature", 0, 2, true, false, "[0, 2)")
	case "top_p":
		e = numberIn(v, "top_p", 0, 1, false, true, "(0, 1]")
	case "frequency_penalty", "presence_penalty":
		e = numberIn(v, key, -2, 2, true, true, "[-2, 2]")
	case "max_tokens":
		*maxTokens, e = positiveInt("max_tokens", v)
	case "max_completion_tokens":
		*maxCompl, e = positiveInt("max_completion_tokens", v)
	}
	return e
}

// topMember returns the bit of a top-level member of a chat (or, unless
// chat, Messages) request that the gateway reads, zero for the others.
func topMember(key string, chat bool) uint32 {
	switch key {
	case "model":
		return 1 << 0
	case "messages":
		return 1 << 1
	case "tools":
		return 1 << 2
	case "stream":
		return 1 << 3
	case "max_tokens":
		return 1 << 4
	}
	if !chat {
		if key == "system" {
			return 1 << 5
		}
		return 0
	}
	switch key {
	case "stream_options":
		return 1 << 6
	case "stop":
		return 1 << 7
	case "temperature":
		return 1 << 8
	case "top_p":
		return 1 << 9
	case "frequency_penalty":
		return 1 << 10
	case "presence_penalty":
		return 1 << 11
	case "max_completion_tokens":
		return 1 << 12
	}
	return 0
}

// streamOptions reads the stream_options value that starts with t: where
// it is, where its include_usage value is, and whether that is true. A
// repeated include_usage is refused.
func (r *reqScan) streamOptions(t token) (at, usageAt dialect.Span, includeUsage, ok bool) {
	var end int
	if t.Kind != jsonlimit.BeginObject {
		end, ok = r.skip(t)
		return dialect.Span{At: t.Start, End: end}, dialect.Span{}, false, ok
	}
	r.push("stream_options", 0)
	defer r.pop()
	var seen uint32
	end, ok = r.members(func(key string, v token) bool {
		end, ok := r.skip(v)
		if key == "include_usage" {
			r.once(&seen, 1, key)
			includeUsage = v.Kind == jsonlimit.True
			usageAt = dialect.Span{At: v.Start, End: end}
		}
		return ok
	})
	return dialect.Span{At: t.Start, End: end}, usageAt, includeUsage, ok
}

// stop checks the stop value that starts with t: null, a string, or an
// array of at most maxStopWords strings.
func (r *reqScan) stop(t token) bool {
	switch t.Kind {
	case jsonlimit.Null, jsonlimit.String:
		return true
	case jsonlimit.BeginArray:
	default:
		r.refuse(apierror.InvalidRequest("stop", "stop must be a string or an array of strings"))
		_, ok := r.skip(t)
		return ok
	}
	n, strs := 0, true
	ok := r.elements(func(v token) bool {
		n++
		strs = strs && v.Kind == jsonlimit.String
		_, ok := r.skip(v)
		return ok
	})
	switch {
	case !strs:
		r.refuse(apierror.InvalidRequest("stop", "stop must be a string or an array of strings"))
	case n > maxStopWords:
		r.refuse(apierror.InvalidRequest("stop", fmt.Sprintf("stop accepts at most %d stop words, got %d", maxStopWords, n)))
	}
	return ok
}

// repeated is the refusal of a member, named by its path, that appears
// more than once in its object.
func repeated(param string) *apierror.Error {
	return apierror.InvalidRequest(param, fmt.Sprintf("%q appears more than once in the request body", param))
}

// modelField returns the model id, which must be a non-empty string
// written in valid UTF-8 (a parser that replaces invalid bytes would read
// another id). The id is copied: the body may be reused after the request.
func modelField(v gjson.Result) (string, *apierror.Error) {
	if v.Type != gjson.String || v.Str == "" || !utf8.ValidString(v.Raw) {
		return "", missingOr(v.Exists(), "model", "a non-empty string")
	}
	return strings.Clone(v.Str), nil
}

// missingOr reports a required field as missing, or, when present, as not
// being what.
func missingOr(present bool, param, what string) *apierror.Error {
	if !present {
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
