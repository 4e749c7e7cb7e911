package chatproxy

import (
	"bytes"
	"strconv"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// A request body is read once, token by token (jsonlimit.Scanner): the
// scan validates it and bounds its nesting as jsonlimit.Check does, while
// the methods below take from the tokens as they pass the members the
// gateway reads and the size of the prompt (see estimate.go). No tree is
// built and no string is unescaped but keys and the model id that contain
// a backslash: text is sized by its raw length.
//
// The decisions are those of the gjson walk this scan replaced: a body that
// is not valid JSON, or nests too deep, is refused for that whatever else
// is wrong with it; then the first member in body order that breaks a
// rule; then a missing model, then messages. Where a member is repeated,
// the last "messages", "tools" and "system" count, as do all the "content"
// and "tool_calls" of a message; in a content block, the first "type",
// "text", "thinking", "name", "input" and "content" do.

type token = jsonlimit.Token

// reqScan is the scan of one request body.
type reqScan struct {
	s jsonlimit.Scanner
	b []byte
	// err is the first rule the body breaks, in member order.
	err *apierror.Error
}

// next returns the next token; false once the scan failed (s.Err).
func (r *reqScan) next() (token, bool) {
	t, err := r.s.Next()
	return t, err == nil
}

// skip reads the rest of the value that starts with t and returns the
// index past it.
func (r *reqScan) skip(t token) (int, bool) {
	end, err := r.s.Skip(t)
	return end, err == nil
}

// refuse records e unless the body already broke a rule.
func (r *reqScan) refuse(e *apierror.Error) {
	if r.err == nil {
		r.err = e
	}
}

// text returns the string token t's value: its raw contents, unescaped
// only when they hold a backslash.
func (r *reqScan) text(t token) string {
	raw := r.b[t.Start:t.End]
	if bytes.IndexByte(raw, '\\') < 0 {
		return str(raw[1 : len(raw)-1])
	}
	return gjson.Parse(str(raw)).Str
}

// result reads the value that starts with t as the gjson.Result the rules
// of inspect.go take.
func (r *reqScan) result(t token) (gjson.Result, bool) {
	end, ok := r.skip(t)
	if !ok {
		return gjson.Result{}, false
	}
	v := gjson.Result{Raw: str(r.b[t.Start:end]), Index: t.Start}
	switch t.Kind {
	case jsonlimit.String:
		v.Type, v.Str = gjson.String, r.text(t)
	case jsonlimit.Number:
		v.Type = gjson.Number
		v.Num, _ = strconv.ParseFloat(v.Raw, 64)
	case jsonlimit.True:
		v.Type = gjson.True
	case jsonlimit.False:
		v.Type = gjson.False
	case jsonlimit.Null:
		v.Type = gjson.Null
	default:
		v.Type = gjson.JSON
	}
	return v, true
}

// rawLen reads the value that starts with t and returns its raw length,
// zero for null.
func (r *reqScan) rawLen(t token) (int, bool) {
	end, ok := r.skip(t)
	if t.Kind == jsonlimit.Null {
		return 0, ok
	}
	return end - t.Start, ok
}

// textLen is rawLen, but a string counts without its quotes.
func (r *reqScan) textLen(t token) (int, bool) {
	if t.Kind == jsonlimit.String {
		return t.End - t.Start - 2, true
	}
	return r.rawLen(t)
}

// members calls fn with the key and the first token of the value of each
// member of the object whose '{' was just read; fn reads the value. It
// returns the index past the object.
func (r *reqScan) members(fn func(key string, v token) bool) (int, bool) {
	for {
		k, ok := r.next()
		if !ok {
			return 0, false
		}
		if k.Kind == jsonlimit.EndObject {
			return k.End, true
		}
		v, ok := r.next()
		if !ok || !fn(r.text(k), v) {
			return 0, false
		}
	}
}

// object reads the whole body as one JSON object whose members fn reads,
// and returns the first error: the body's syntax or depth error, a body
// that is not an object, or what fn refused.
func (r *reqScan) object(fn func(key string, v token) bool) *apierror.Error {
	t, ok := r.next()
	switch {
	case ok && t.Kind == jsonlimit.BeginObject:
		_, ok = r.members(fn)
	case ok:
		_, ok = r.skip(t)
		r.refuse(apierror.InvalidRequest("", "the request body must be a JSON object"))
	}
	if ok {
		_, ok = r.next() // Done, or trailing bytes
	}
	if !ok {
		return apierror.InvalidBody(r.s.Err())
	}
	return r.err
}

// elements calls fn with the first token of each element of the array
// whose '[' was just read; fn reads the element.
func (r *reqScan) elements(fn func(v token) bool) bool {
	for {
		v, ok := r.next()
		if !ok {
			return false
		}
		if v.Kind == jsonlimit.EndArray {
			return true
		}
		if !fn(v) {
			return false
		}
	}
}

// messagesBytes sizes the prompt text of a messages array whose '[' was
// just read: per message, messageOverhead, its contents and its tool
// calls.
func (r *reqScan) messagesBytes() (n int, ok bool) {
	ok = r.elements(func(m token) bool {
		n += messageOverhead
		if m.Kind != jsonlimit.BeginObject {
			_, ok := r.skip(m)
			return ok
		}
		_, ok := r.members(func(key string, v token) bool {
			var k int
			var ok bool
			switch key {
			case "content":
				k, ok = r.contentBytes(v)
			case "tool_calls":
				k, ok = r.rawLen(v)
			default:
				_, ok = r.skip(v)
			}
			n += k
			return ok
		})
		return ok
	})
	return n, ok
}

// contentBytes sizes a message content that starts with t: a string, or
// an array of blocks.
func (r *reqScan) contentBytes(t token) (n int, ok bool) {
	if t.Kind != jsonlimit.BeginArray {
		return r.textLen(t)
	}
	ok = r.elements(func(b token) bool {
		k, ok := r.blockBytes(b)
		n += k
		return ok
	})
	return n, ok
}

// Fields of a content block, in blockBytes.
const (
	fieldType = 1 << iota
	fieldText
	fieldThinking
	fieldName
	fieldInput
	fieldContent
)

// blockBytes sizes one content block of either protocol, that starts with
// t, by its type: the text of text and thinking blocks, the name and input
// of a tool use, the content of a tool result, mediaBlockBytes for media,
// and the raw length of anything else. The members it reads may come in
// any order, so it sizes each as it passes and picks by type at the end.
func (r *reqScan) blockBytes(t token) (int, bool) {
	if t.Kind != jsonlimit.BeginObject {
		return r.rawLen(t)
	}
	var (
		seen                                 uint8
		typ                                  string
		text, thinking, name, input, content int
	)
	end, ok := r.members(func(key string, v token) bool {
		var ok bool
		switch {
		case key == "type" && first(&seen, fieldType):
			if v.Kind == jsonlimit.String {
				typ = r.text(v)
			}
			_, ok = r.skip(v)
		case key == "text" && first(&seen, fieldText):
			text, ok = r.textLen(v)
		case key == "thinking" && first(&seen, fieldThinking):
			thinking, ok = r.textLen(v)
		case key == "name" && first(&seen, fieldName):
			name, ok = r.textLen(v)
		case key == "input" && first(&seen, fieldInput):
			input, ok = r.rawLen(v)
		case key == "content" && first(&seen, fieldContent):
			content, ok = r.contentBytes(v)
		default:
			_, ok = r.skip(v)
		}
		return ok
	})
	if !ok {
		return 0, false
	}
	switch typ {
	case "text", "input_text":
		return text, true
	case "thinking":
		return thinking, true
	case "tool_use":
		return name + input, true
	case "tool_result":
		return content, true
	case "image_url", "image", "input_image", "input_audio", "file", "document", "video_url", "video", "audio":
		return mediaBlockBytes, true
	}
	return end - t.Start, true
}
