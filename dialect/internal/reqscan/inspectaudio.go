package reqscan

import (
	"github.com/caddy-air/caddy-air/dialect"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// DefaultSpeechFormat is the response_format of a speech request that
// sets none, as OpenAI's.
const DefaultSpeechFormat = "mp3"

// InspectSpeech is openai.InspectSpeech.
func InspectSpeech(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in                   dialect.Inspected
		model, input, format gjson.Result
		streamFormat         gjson.Result
		seen                 uint32
	)
	member := func(key string, v token) bool {
		var dst *gjson.Result
		var bit uint32
		switch key {
		case "model":
			dst, bit = &model, 1
		case "input":
			dst, bit = &input, 2
		case "response_format":
			dst, bit = &format, 4
		case "stream_format":
			dst, bit = &streamFormat, 8
		default:
			_, ok := r.skip(v)
			return ok
		}
		r.once(&seen, bit, key)
		var ok bool
		*dst, ok = r.result(v)
		if key == "model" {
			in.Located.Model = dialect.Span{At: v.Start, End: v.Start + len(model.Raw)}
		}
		return ok
	}
	if e := r.object(member); e != nil {
		return dialect.Inspected{}, e
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return dialect.Inspected{}, e
	}
	if input.Type != gjson.String || input.Str == "" || !utf8.ValidString(input.Str) {
		return dialect.Inspected{}, missingOr(input.Exists(), "input", "a non-empty string")
	}
	in.Characters, in.PromptBytes = int64(utf8.RuneCountInString(input.Str)), len(input.Str)
	switch {
	case !format.Exists() || format.Type == gjson.Null:
		in.Format = DefaultSpeechFormat
	case format.Type != gjson.String || format.Str == "":
		return dialect.Inspected{}, missingOr(true, "response_format", "a string such as mp3, opus, aac, flac, wav or pcm")
	default:
		in.Format = format.Str
	}
	if streamFormat.Exists() && streamFormat.Type != gjson.Null && streamFormat.Str != "audio" {
		return dialect.Inspected{}, apierror.InvalidRequest("stream_format",
			`stream_format must be "audio": the gateway streams the audio bytes as they arrive, not speech events`)
	}
	return in, nil
}

// InspectRerank is cohere.InspectRerank.
func InspectRerank(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error) {
	r := reqScan{b: body}
	r.s.Reset(body, jsonlimit.OrDefault(maxDepth))
	var (
		in           dialect.Inspected
		model, query gjson.Result
		seen         uint32
		docs         bool
	)
	member := func(key string, v token) bool {
		switch key {
		case "model":
			r.once(&seen, 1, key)
			var ok bool
			model, ok = r.result(v)
			in.Located.Model = dialect.Span{At: v.Start, End: v.Start + len(model.Raw)}
			return ok
		case "query":
			r.once(&seen, 2, key)
			var ok bool
			query, ok = r.result(v)
			in.PromptBytes += len(query.Str)
			return ok
		case "documents":
			r.once(&seen, 4, key)
			if v.Kind != jsonlimit.BeginArray {
				_, ok := r.skip(v)
				return ok
			}
			docs = true
			return r.elements(func(d token) bool {
				in.Documents++
				n, ok := r.textLen(d)
				in.PromptBytes += n
				return ok
			})
		}
		_, ok := r.skip(v)
		return ok
	}
	if e := r.object(member); e != nil {
		return dialect.Inspected{}, e
	}
	var e *apierror.Error
	if in.Model, e = modelField(model); e != nil {
		return dialect.Inspected{}, e
	}
	if query.Type != gjson.String || query.Str == "" {
		return dialect.Inspected{}, missingOr(query.Exists(), "query", "a non-empty string")
	}
	if !docs || in.Documents == 0 {
		return dialect.Inspected{}, missingOr(seen&4 != 0, "documents", "a non-empty array of strings or objects with a text")
	}
	return in, nil
}
