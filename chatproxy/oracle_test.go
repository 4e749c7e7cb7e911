package chatproxy

// The gjson-based inspection that reqscan.go replaced, kept as the oracle
// of TestInspectDifferential: it validated with jsonlimit.Check, walked the
// members with gjson's ForEach, then walked the messages again to size the
// prompt.

import (
	"fmt"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// oracleSpanOf locates the value v, which gjson read from a body.
func oracleSpanOf(v gjson.Result) span { return span{v.Index, v.Index + len(v.Raw)} }

// oracleInspectChat validates an OpenAI chat completions request body and returns
// what the gateway needs from it. Only the documented constraints are
// enforced; unknown fields pass. A repeated "model", "stream" or
// "stream_options" key is rejected: the gateway and the upstream could
// otherwise read different values (e.g. bill one model and run another).
// A body nested deeper than maxDepth levels is rejected before anything
// reads it; zero means jsonlimit.DefaultMaxDepth.
func oracleInspectChat(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	root, e := oracleParseBody(body, maxDepth)
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
			model, in.model = v, oracleSpanOf(v)
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
			in.streamOptions = oracleSpanOf(v)
			in.IncludeUsage = v.Get("include_usage").Type == gjson.True
		case "stop":
			e = oracleCheckStop(v)
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
	if in.Model, e = oracleModelField(model); e != nil {
		return Inspected{}, e
	}
	if !messages.IsArray() {
		return Inspected{}, oracleMissingOr(messages, "messages", "an array")
	}
	if len(messages.Array()) == 0 {
		return Inspected{}, apierror.InvalidRequest("messages", "messages must contain at least one message")
	}
	in.MaxTokens = maxTokens
	if maxCompl > 0 {
		in.MaxTokens = maxCompl
	}
	in.PromptBytes = oraclePromptBytes(messages, gjson.Result{}, tools)
	return in, nil
}

// oracleInspectMessages validates an Anthropic Messages request body: a JSON
// object with a string model, an array of messages and a boolean stream,
// nested at most maxDepth levels (zero means jsonlimit.DefaultMaxDepth).
// Errors are meant to be written with (*apierror.Error).WriteAnthropic.
func oracleInspectMessages(body []byte, maxDepth int) (Inspected, *apierror.Error) {
	root, e := oracleParseBody(body, maxDepth)
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
			model, in.model = v, oracleSpanOf(v)
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
	if in.Model, e = oracleModelField(model); e != nil {
		return Inspected{}, e
	}
	if !messages.IsArray() {
		return Inspected{}, oracleMissingOr(messages, "messages", "an array")
	}
	if len(messages.Array()) == 0 {
		return Inspected{}, apierror.InvalidRequest("messages", "messages must contain at least one message")
	}
	in.PromptBytes = oraclePromptBytes(messages, system, tools)
	return in, nil
}

// oracleParseBody checks that body is one JSON object nested at most maxDepth
// levels (jsonlimit.DefaultMaxDepth when zero).
func oracleParseBody(body []byte, maxDepth int) (gjson.Result, *apierror.Error) {
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(maxDepth)); err != nil {
		return gjson.Result{}, apierror.InvalidBody(err)
	}
	root := gjson.Parse(str(body))
	if !root.IsObject() {
		return gjson.Result{}, apierror.InvalidRequest("", "the request body must be a JSON object")
	}
	return root, nil
}

// oracleMissingOr reports a required field as missing, or as not being what.
func oracleMissingOr(v gjson.Result, param, what string) *apierror.Error {
	if !v.Exists() {
		return apierror.InvalidRequest(param, fmt.Sprintf("you must provide a %s parameter", param))
	}
	return apierror.InvalidRequest(param, fmt.Sprintf("%s must be %s", param, what))
}

// oracleCheckStop accepts null, a string, or an array of at most maxStopWords
// strings.
func oracleCheckStop(v gjson.Result) *apierror.Error {
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

// oraclePromptBytes sizes the prompt text of a request (see above).
func oraclePromptBytes(messages, system, tools gjson.Result) int {
	n := oracleContentBytes(system) + rawLen(tools)
	messages.ForEach(func(_, m gjson.Result) bool {
		n += messageOverhead
		m.ForEach(func(k, v gjson.Result) bool {
			switch k.Str {
			case "content":
				n += oracleContentBytes(v)
			case "tool_calls":
				n += rawLen(v)
			}
			return true
		})
		return true
	})
	return n
}

// oracleContentBytes sizes a message content: a string, or an array of blocks.
func oracleContentBytes(c gjson.Result) int {
	if !c.IsArray() {
		return textLen(c)
	}
	n := 0
	c.ForEach(func(_, b gjson.Result) bool {
		n += oracleBlockBytes(b)
		return true
	})
	return n
}

// oracleBlockBytes sizes one content block of either protocol.
func oracleBlockBytes(b gjson.Result) int {
	switch b.Get("type").Str {
	case "text", "input_text":
		return textLen(b.Get("text"))
	case "thinking":
		return textLen(b.Get("thinking"))
	case "tool_use":
		return textLen(b.Get("name")) + rawLen(b.Get("input"))
	case "tool_result":
		return oracleContentBytes(b.Get("content"))
	case "image_url", "image", "input_image", "input_audio", "file", "document", "video_url", "video", "audio":
		return mediaBlockBytes
	}
	return rawLen(b)
}

// oracleModelField is modelField as it was.
func oracleModelField(v gjson.Result) (string, *apierror.Error) {
	if v.Type != gjson.String || v.Str == "" {
		return "", oracleMissingOr(v, "model", "a non-empty string")
	}
	return strings.Clone(v.Str), nil
}
