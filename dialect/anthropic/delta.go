package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// The events of an Anthropic stream are mostly content_block_delta events,
// one per piece of text. The tap reads those in one pass (deltaBytes),
// validating them as jsonlimit.Check does while it sizes their text, and
// leaves the rest (message_start, message_delta, message_stop, errors:
// a few per stream) to the gjson reading of anthropicEvent.

// deltaBytes sizes the text of the content_block_delta event payload, as
// deltaTextBytes does, in one pass: the text, thinking and
// partial_json of its delta. ok is false when payload is not valid JSON,
// nests deeper than maxDepth, or is not a plain content_block_delta event
// (its first type is not that string, written without escapes; it has a
// content_block member; its delta is not an object): the caller reads it
// the general way.
func deltaBytes(payload []byte, maxDepth int) (n int, ok bool) {
	r := deltaScan{b: payload}
	r.s.Reset(payload, maxDepth)
	t, ok := r.next()
	if !ok || t.Kind != jsonlimit.BeginObject {
		return 0, false
	}
	var seen uint8
	isDelta, plain := false, true
	_, ok = r.members(func(key string, v jsonlimit.Token) bool {
		switch {
		case key == "type" && first(&seen, fieldType):
			raw := payload[v.Start:v.End]
			if isDelta = v.Kind == jsonlimit.String && string(raw) == `"content_block_delta"`; !isDelta {
				return false // another event: no need to read on
			}
		case key == "content_block":
			plain = false
		case key == "delta" && first(&seen, fieldContent):
			if v.Kind != jsonlimit.BeginObject {
				plain = false
				break
			}
			var fields uint8
			_, ok := r.members(func(key string, v jsonlimit.Token) bool {
				var k int
				var ok bool
				switch {
				case key == "text" && first(&fields, fieldText),
					key == "thinking" && first(&fields, fieldThinking),
					key == "partial_json" && first(&fields, fieldInput):
					k, ok = r.textLen(v)
				default:
					_, ok = r.skip(v)
				}
				n += k
				return ok
			})
			return ok
		}
		_, ok := r.skip(v)
		return ok
	})
	if ok {
		_, ok = r.next() // Done, or trailing bytes
	}
	return n, ok && isDelta && plain
}

// first records in *seen that the field f was met, and reports whether it
// was the first time.
func first(seen *uint8, f uint8) bool {
	if *seen&f != 0 {
		return false
	}
	*seen |= f
	return true
}

// Fields of an event, in deltaBytes.
const (
	fieldType = 1 << iota
	fieldText
	fieldThinking
	fieldInput
	fieldContent
)

// deltaScan is the scan of one event payload by deltaBytes: a
// jsonlimit.Scanner, validating as jsonlimit.Check does, with the few
// readings deltaBytes takes of its tokens (those of the gateway's request
// scanner).
type deltaScan struct {
	s jsonlimit.Scanner
	b []byte
}

// next returns the next token; false once the scan failed.
func (r *deltaScan) next() (jsonlimit.Token, bool) {
	t, err := r.s.Next()
	return t, err == nil
}

// skip reads the rest of the value that starts with t and returns the
// index past it.
func (r *deltaScan) skip(t jsonlimit.Token) (int, bool) {
	end, err := r.s.Skip(t)
	return end, err == nil
}

// textLen reads the value that starts with t and returns its raw length,
// without the quotes of a string, zero for null.
func (r *deltaScan) textLen(t jsonlimit.Token) (int, bool) {
	if t.Kind == jsonlimit.String {
		return t.End - t.Start - 2, true
	}
	end, ok := r.skip(t)
	if t.Kind == jsonlimit.Null {
		return 0, ok
	}
	return end - t.Start, ok
}

// text returns the string token t's value: its raw contents, unescaped
// only when they hold a backslash, as encoding/json unescapes.
func (r *deltaScan) text(t jsonlimit.Token) string {
	raw := r.b[t.Start:t.End]
	if bytes.IndexByte(raw, '\\') < 0 {
		return tapcore.Str(raw[1 : len(raw)-1])
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return gjson.Parse(tapcore.Str(raw)).Str
	}
	return s
}

// members calls fn with the key and the first token of the value of each
// member of the object whose '{' was just read; fn reads the value. It
// returns the index past the object.
func (r *deltaScan) members(fn func(key string, v jsonlimit.Token) bool) (int, bool) {
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

// deltaTextBytes sizes the text of a content_block_start or
// content_block_delta event.
func deltaTextBytes(ev gjson.Result) int {
	if b := ev.Get("content_block"); b.Exists() {
		return dialect.TextLen(b.Get("name")) + dialect.TextLen(b.Get("text")) + dialect.TextLen(b.Get("thinking"))
	}
	d := ev.Get("delta")
	return dialect.TextLen(d.Get("text")) + dialect.TextLen(d.Get("thinking")) + dialect.TextLen(d.Get("partial_json"))
}

// outputBytes sizes the content of a whole Messages response.
func outputBytes(resp gjson.Result) int {
	n := 0
	resp.Get("content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "tool_use" {
			n += dialect.TextLen(b.Get("name")) + dialect.RawLen(b.Get("input"))
		} else {
			n += dialect.TextLen(b.Get("text")) + dialect.TextLen(b.Get("thinking"))
		}
		return true
	})
	return n
}
