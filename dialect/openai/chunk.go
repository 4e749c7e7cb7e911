package openai

import "github.com/caddy-air/caddy-air/dialect/internal/tapcore"

// The stream tap reads every chunk of every OpenAI stream, so it scans a
// chunk by hand, in one pass, instead of walking it with gjson. gjson's
// ForEach over the chunk's members, then its choices, each choice and each
// delta reads the choices part four times and builds a Result per member:
// about 800 ns per chunk on the benchmark machine and 15% of the gateway's
// CPU under the streaming benchmark. The scan below reads each byte once
// and allocates nothing (about 370 ns per chunk). Like gjson's Parse, it
// checks structure only as far as it needs to find its way; a chunk that
// does not scan as one object is forwarded untouched. FuzzScanChunk checks
// it against gjson.
//
// The chunks of a stream begin alike: the same id, object, created, model
// and system_fingerprint, up to the choices. The tap keeps those bytes of
// one chunk (chunkInfo.choicesAt) and scans a next chunk that begins with
// them from its choices on (scanChunk's known): identical bytes leave the
// scan in the same state, and they hold no member the tap reads. Comparing
// the bytes costs a fraction of scanning them; it skips about two thirds of
// a chunk like the mock provider's.
//
// Past the choices, too, the chunks of a stream differ only in their text:
// with usage asked for, each ends with the same logprobs, finish_reason and
// "usage":null. The tap also keeps a chunk's shape, its bytes around its
// text string, and takes a next chunk whose bytes around one string are the
// same without scanning it at all (chunkshape.go).

// chunkInfo is what the tap needs from one chat completion chunk.
type chunkInfo struct {
	// usageAt and usageEnd delimit the value of the last top-level "usage"
	// member; usageAt is -1 when the chunk has none.
	usageAt, usageEnd int
	// choices is set when the last "choices" member is anything but an
	// empty array: the chunk carries more than usage.
	choices bool
	// hasError is set when the chunk has a non-null "error" member.
	hasError bool
	// outBytes is the raw size of the text in the choices' deltas: content,
	// reasoning, tool call names and arguments (see dialect.TextLen).
	outBytes int
	// choicesAt is the index of the value of the first "choices" member
	// when no member the tap reads comes before it, else zero: a later
	// chunk that begins with the same bytes may be scanned from there.
	choicesAt int
	// textAt and textEnd delimit, quotes included, the last text value
	// counted in outBytes that is a string; both are zero when there is
	// none. A chunk's shape is the bytes around it (see chunkshape.go).
	textAt, textEnd int
}

// choicesKey is the key scanChunk resumes at.
var choicesKey = []byte("choices")

// scanChunk scans the JSON object payload. ok is false when payload does
// not scan as one object, or nests deeper than maxDepth, and then info means
// nothing. known is zero, or the choicesAt of an earlier chunk's scan, with
// the same maxDepth, whose bytes up to there payload begins with: the scan
// then starts at the value of payload's choices.
//
// The scan functions below take the room of the value they scan: how many
// levels of nesting it may open. Their own recursion follows the chunk's
// fixed shape, a few levels deep whatever the input, and valueEnd skips the
// rest without recursion: a hostile upstream's deep chunk costs one pass.
func scanChunk(payload []byte, known, maxDepth int) (info chunkInfo, ok bool) {
	b := payload
	info.usageAt = -1
	read := false // a member the tap reads came before
	member := func(key []byte, at, room int) int {
		switch string(key) {
		case "choices":
			if !read {
				info.choicesAt = at
			}
			read = true
			if b[at] != '[' {
				info.choices = true
				return valueEnd(b, at, room)
			}
			n := 0
			e := eachElement(b, at, room, func(at, room int) int {
				n++
				return choiceEnd(b, at, room, &info)
			})
			info.choices = n > 0
			return e
		case "usage":
			read = true
			e := valueEnd(b, at, room)
			info.usageAt, info.usageEnd = at, e
			return e
		case "error":
			read = true
			e := valueEnd(b, at, room)
			info.hasError = info.hasError || e >= 0 && !isNull(b[at:e])
			return e
		}
		return valueEnd(b, at, room)
	}
	var end int
	if known > 0 && known < len(b) {
		end = membersAfter(b, member(choicesKey, known, maxDepth-1), maxDepth, member)
	} else {
		end = eachMember(b, tapcore.SkipSpace(b, 0), maxDepth, member)
	}
	return info, end >= 0 && tapcore.SkipSpace(b, end) == len(b)
}

// choiceEnd scans the element of choices at b[at], adding the size of its
// delta's text to info (see textEnd), and returns the index past it (-1 if
// malformed or too deep).
func choiceEnd(b []byte, at, room int, info *chunkInfo) int {
	return objectMemberEnd(b, at, room, "delta", func(at, room int) int {
		return eachMember(b, at, room, func(key []byte, at, room int) int {
			switch string(key) {
			case "content", "reasoning_content", "reasoning":
				return textEnd(b, at, room, info)
			case "tool_calls":
				if b[at] != '[' {
					return valueEnd(b, at, room)
				}
				return eachElement(b, at, room, func(at, room int) int { return toolCallEnd(b, at, room, info) })
			}
			return valueEnd(b, at, room)
		})
	})
}

// toolCallEnd scans the tool call at b[at], adding the size of its
// function's name and arguments to info (see textEnd).
func toolCallEnd(b []byte, at, room int, info *chunkInfo) int {
	return objectMemberEnd(b, at, room, "function", func(at, room int) int {
		return eachMember(b, at, room, func(key []byte, at, room int) int {
			if string(key) == "name" || string(key) == "arguments" {
				return textEnd(b, at, room, info)
			}
			return valueEnd(b, at, room)
		})
	})
}

// objectMemberEnd scans the value at b[at] and returns the index past it.
// When the value is an object, fn scans the value of each of its members
// named name that is an object, and returns the index past it.
func objectMemberEnd(b []byte, at, room int, name string, fn func(at, room int) int) int {
	if b[at] != '{' {
		return valueEnd(b, at, room)
	}
	return eachMember(b, at, room, func(key []byte, at, room int) int {
		if string(key) != name || b[at] != '{' {
			return valueEnd(b, at, room)
		}
		return fn(at, room)
	})
}

// textEnd scans the value at b[at], adding its text size to
// info.outBytes as textLen does: a string's raw length without quotes,
// nothing for null, and the raw length of any other value. A string is
// also recorded as info's last text (textAt, textEnd).
func textEnd(b []byte, at, room int, info *chunkInfo) int {
	e := valueEnd(b, at, room)
	switch {
	case e < 0:
	case b[at] == '"':
		info.outBytes += e - at - 2
		info.textAt, info.textEnd = at, e
	case !isNull(b[at:e]):
		info.outBytes += e - at
	}
	return e
}

// eachMember calls fn for each member of the object at b[i], which may
// open room levels, with the raw key (without its quotes), the index of the
// value's first byte and the value's room; fn returns the index past the
// value, or -1. eachMember returns the index past the object, or -1 if the
// object is malformed, incomplete or too deep.
func eachMember(b []byte, i, room int, fn func(key []byte, at, room int) int) int {
	if room < 1 {
		return -1
	}
	i, done := open(b, i, '{', '}')
	if done {
		return i
	}
	return members(b, i, room-1, fn)
}

// membersAfter is eachMember for the members after the value that ends at
// b[i] (-1 if it is malformed) in an object that may open room levels.
func membersAfter(b []byte, i, room int, fn func(key []byte, at, room int) int) int {
	if i < 0 || room < 1 {
		return -1
	}
	i, done := next(b, i, '}')
	if done {
		return i
	}
	return members(b, i, room-1, fn)
}

// members is eachMember from the member whose key starts at b[i]; room is
// the room of the values.
func members(b []byte, i, room int, fn func(key []byte, at, room int) int) int {
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ke := stringEnd(b, i)
		if ke < 0 {
			return -1
		}
		key := b[i+1 : ke-1]
		i = tapcore.SkipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		at := tapcore.SkipSpace(b, i+1)
		if at >= len(b) {
			return -1
		}
		if i = fn(key, at, room); i < 0 {
			return -1
		}
		var done bool
		if i, done = next(b, i, '}'); done {
			return i
		}
	}
}

// eachElement calls fn with the index of the first byte of each element of
// the array at b[i], which may open room levels, and the element's room; fn
// returns the index past the element, or -1. eachElement returns the index
// past the array, or -1 if the array is malformed, incomplete or too deep.
func eachElement(b []byte, i, room int, fn func(at, room int) int) int {
	if room < 1 {
		return -1
	}
	i, done := open(b, i, '[', ']')
	for !done {
		if i >= len(b) {
			return -1
		}
		if i = fn(i, room-1); i < 0 {
			return -1
		}
		i, done = next(b, i, ']')
	}
	return i
}

// open enters the object or array that must start at b[i] with the byte
// opening. It returns the index of its first item, or, with done set, the
// index past an empty container (-1 if b[i] is not opening).
func open(b []byte, i int, opening, closing byte) (int, bool) {
	if i >= len(b) || b[i] != opening {
		return -1, true
	}
	i = tapcore.SkipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1, true
	}
	return i, false
}

// next reads what follows an item of a container at b[i]: a comma, and it
// returns the index of the next item, or the byte closing, and it returns
// the index past the container with done set (-1 if neither follows).
func next(b []byte, i int, closing byte) (int, bool) {
	i = tapcore.SkipSpace(b, i)
	switch {
	case i >= len(b) || b[i] != ',' && b[i] != closing:
		return -1, true
	case b[i] == closing:
		return i + 1, true
	}
	return tapcore.SkipSpace(b, i+1), false
}

// valueEnd returns the index past the JSON value that starts at b[i], or
// -1 if it is malformed, incomplete, or opens more than room levels.
// Objects and arrays are skipped by counting brackets outside strings.
func valueEnd(b []byte, i, room int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = stringEnd(b, i); i < 0 {
					return -1
				}
				i-- // the loop steps past the closing quote
			case '{', '[':
				if depth++; depth > room {
					return -1
				}
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	case ',', ':', '}', ']':
		return -1
	}
	// A number, true, false or null.
	j := i
	for j < len(b) && !tapcore.IsSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' {
		j++
	}
	return j
}

// stringEnd returns the index past the closing quote of the string whose
// opening quote is b[i], or -1 if it is not closed. The strings of a chunk
// are short: a byte loop beats bytes.IndexByte's call and setup.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			i++ // the escaped byte
		}
	}
	return -1
}

// isNull reports whether raw is the JSON null.
func isNull(raw []byte) bool { return string(raw) == "null" }
