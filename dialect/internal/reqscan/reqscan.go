// Package reqscan reads a client's request body once, token by token, for
// every dialect's inspection (openai.InspectChat, anthropic.InspectMessages,
// responses.InspectResponses, …): it validates the body, bounds its
// nesting, refuses repeated members the gateway reads, sizes the prompt and
// locates the members PrepareBody may edit.
package reqscan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/tidwall/gjson"
)

// A request body is read once, token by token (jsonlimit.Scanner): the
// scan validates it and bounds its nesting as jsonlimit.Check does, while
// the methods below take from the tokens as they pass the members the
// gateway reads and the size of the prompt (see dialect.Estimate). No tree is
// built and no string is unescaped but keys and the model id that contain
// a backslash: text is sized by its raw length.
//
// The decisions: a body that is not valid JSON, or nests too deep, is
// refused for that whatever else is wrong with it; then the first member
// in body order that breaks a rule; then a missing model, then messages.
// Every member the gateway reads, at any depth it reads (the top of the
// body, stream_options, a message, a content block), may appear only once
// in its object, whatever its spelling ("include\u005fusage" is
// include_usage): a repeat is refused naming it by its path
// (messages[0].content[1].text), since the gateway would read one copy
// where a provider, whose parser takes the first or the last, might act
// on the other.

type token = jsonlimit.Token

// reqScan is the scan of one request body.
type reqScan struct {
	s jsonlimit.Scanner
	b []byte
	// err is the first rule the body breaks, in member order.
	err *apierror.Error
	// path is where the scan reads, for naming a repeated member: the
	// first maxPath of its depth levels (deeper ones are left out of the
	// name).
	path  [maxPath]pathSeg
	depth int
}

// maxPath is how many levels of a member's path a refusal names.
const maxPath = 12

// pathSeg is one level of the path of a member: a key, or the index of an
// element when key is empty.
type pathSeg struct {
	key string
	idx int
}

// push enters the member key, or the element idx when key is empty.
func (r *reqScan) push(key string, idx int) {
	if r.depth < maxPath {
		r.path[r.depth] = pathSeg{key, idx}
	}
	r.depth++
}

// pop leaves what push entered.
func (r *reqScan) pop() { r.depth-- }

// param names the member key of the object the scan is in by its path.
func (r *reqScan) param(key string) string {
	var b strings.Builder
	for _, s := range r.path[:min(r.depth, maxPath)] {
		if s.key == "" {
			b.WriteString("[" + strconv.Itoa(s.idx) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	if b.Len() > 0 {
		b.WriteByte('.')
	}
	b.WriteString(key)
	return b.String()
}

// once records that the member key, bit of seen, was read in the object
// the scan is in, and refuses a repeat of it.
func (r *reqScan) once(seen *uint32, bit uint32, key string) {
	if *seen&bit != 0 {
		r.refuse(repeated(r.param(key)))
	}
	*seen |= bit
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
// only when they hold a backslash, as encoding/json unescapes (gjson
// reads some escapes of lone surrogates otherwise).
func (r *reqScan) text(t token) string {
	raw := r.b[t.Start:t.End]
	if bytes.IndexByte(raw, '\\') < 0 {
		return dialect.Str(raw[1 : len(raw)-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return gjson.Parse(dialect.Str(raw)).Str
	}
	return s
}

// result reads the value that starts with t as the gjson.Result the rules
// of inspect.go take.
func (r *reqScan) result(t token) (gjson.Result, bool) {
	end, ok := r.skip(t)
	if !ok {
		return gjson.Result{}, false
	}
	v := gjson.Result{Raw: dialect.Str(r.b[t.Start:end]), Index: t.Start}
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

// messagesBytes sizes the prompt text of a messages array, the member
// key, whose '[' was just read: per message, dialect.MessageOverhead, its contents
// and its tool calls.
func (r *reqScan) messagesBytes(key string) (n int, ok bool) {
	r.push(key, 0)
	defer r.pop()
	i := -1
	ok = r.elements(func(m token) bool {
		i++
		n += dialect.MessageOverhead
		if m.Kind != jsonlimit.BeginObject {
			_, ok := r.skip(m)
			return ok
		}
		r.push("", i)
		defer r.pop()
		var seen uint32
		_, ok := r.members(func(key string, v token) bool {
			var k int
			var ok bool
			switch key {
			case "content":
				r.once(&seen, 1, key)
				k, ok = r.contentBytes(key, v)
			case "tool_calls":
				r.once(&seen, 2, key)
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

// contentBytes sizes a message content, the member key, that starts with
// t: a string, or an array of blocks.
func (r *reqScan) contentBytes(key string, t token) (n int, ok bool) {
	if t.Kind != jsonlimit.BeginArray {
		return r.textLen(t)
	}
	r.push(key, 0)
	defer r.pop()
	i := -1
	ok = r.elements(func(b token) bool {
		i++
		r.push("", i)
		k, ok := r.blockBytes(b)
		r.pop()
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
// of a tool use, the content of a tool result, dialect.MediaBlockBytes for media,
// and the raw length of anything else. The members it reads may come in
// any order, so it sizes each as it passes and picks by type at the end.
func (r *reqScan) blockBytes(t token) (int, bool) {
	if t.Kind != jsonlimit.BeginObject {
		return r.rawLen(t)
	}
	var (
		seen                                 uint32
		typ                                  string
		text, thinking, name, input, content int
	)
	end, ok := r.members(func(key string, v token) bool {
		var ok bool
		switch key {
		case "type":
			r.once(&seen, fieldType, key)
			if v.Kind == jsonlimit.String {
				typ = r.text(v)
			}
			_, ok = r.skip(v)
		case "text":
			r.once(&seen, fieldText, key)
			text, ok = r.textLen(v)
		case "thinking":
			r.once(&seen, fieldThinking, key)
			thinking, ok = r.textLen(v)
		case "name":
			r.once(&seen, fieldName, key)
			name, ok = r.textLen(v)
		case "input":
			r.once(&seen, fieldInput, key)
			input, ok = r.rawLen(v)
		case "content":
			r.once(&seen, fieldContent, key)
			content, ok = r.contentBytes(key, v)
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
		return dialect.MediaBlockBytes, true
	}
	return end - t.Start, true
}
