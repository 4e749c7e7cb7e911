package chatproxy

import (
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// The events of an Anthropic stream are mostly content_block_delta events,
// one per piece of text. The tap reads those in one pass (deltaBytes),
// validating them as jsonlimit.Check does while it sizes their text, and
// leaves the rest (message_start, message_delta, message_stop, errors:
// a few per stream) to the gjson reading of anthropicEvent.

// deltaBytes sizes the text of the content_block_delta event payload, as
// anthropicDeltaBytes does, in one pass: the text, thinking and
// partial_json of its delta. ok is false when payload is not valid JSON,
// nests deeper than maxDepth, or is not a plain content_block_delta event
// (its first type is not that string, written without escapes; it has a
// content_block member; its delta is not an object): the caller reads it
// the general way.
func deltaBytes(payload []byte, maxDepth int) (n int, ok bool) {
	r := reqScan{b: payload}
	r.s.Reset(payload, maxDepth)
	t, ok := r.next()
	if !ok || t.Kind != jsonlimit.BeginObject {
		return 0, false
	}
	var seen uint8
	isDelta, plain := false, true
	_, ok = r.members(func(key string, v token) bool {
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
			_, ok := r.members(func(key string, v token) bool {
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
