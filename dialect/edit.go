package dialect

import (
	"errors"
	"slices"
)

// includeUsage is the stream_options value injected into a stream request
// of a wire whose usage must be asked for (Wire.StreamUsage) that
// did not ask for it.
const includeUsage = `{"include_usage":true}`

// errUnlocatable means a member the inspection located is not where it
// said: the body is not the one inspected.
var errUnlocatable = errors.New("cannot locate a field in the request body")

// edit replaces body[at:end] with text.
type edit struct {
	at, end int
	text    string
}

// PrepareBody returns the body to send upstream: the client's bytes with
// only targeted edits. The "model" value is replaced by upstreamModel when
// one is given and differs from in.Model; a streaming request of a wire
// whose stream reports its usage only when asked (w.StreamUsage: chat
// completions) that does not set stream_options.include_usage to true
// gets it (injectedUsage
// is then true and the caller must strip the usage from the stream, see
// Call.StripUsage). When no edit applies, body itself is returned.
// in must come from the inspection of the same body (openai.InspectChat,
// anthropic.InspectMessages, …).
func PrepareBody(w Wire, body []byte, in Inspected, upstreamModel string) (out []byte, injectedUsage bool, err error) {
	return prepareBody(w, body, in, upstreamModel, false)
}

// PrepareBodyInPlace is PrepareBody for a caller that owns body and needs
// it no more: the edits are made in body's own memory, moving the bytes
// after each edit, when the result fits cap(body), so that the body is not
// copied. Only when it does not fit is a new body allocated. Either way,
// body's bytes are not the client's afterwards.
func PrepareBodyInPlace(w Wire, body []byte, in Inspected, upstreamModel string) (out []byte, injectedUsage bool, err error) {
	return prepareBody(w, body, in, upstreamModel, true)
}

// PrepareBodyRoom is the most bytes PrepareBody may add to a body that in
// describes, for a caller that wants that room in the body's buffer before
// PrepareBodyInPlace.
func PrepareBodyRoom(w Wire, in Inspected, upstreamModel string) int {
	n := 0
	if upstreamModel != "" && upstreamModel != in.Model {
		n += 2 + 6*len(upstreamModel) // quote's worst case
	}
	if w.StreamUsage() && in.Stream && !in.IncludeUsage {
		n += len(`,"stream_options":`) + len(includeUsage)
	}
	return n
}

func prepareBody(w Wire, body []byte, in Inspected, upstreamModel string, inPlace bool) (out []byte, injectedUsage bool, err error) {
	var edits [2]edit
	n := 0
	if upstreamModel != "" && upstreamModel != in.Model {
		if in.Located.Model.At <= 0 || in.Located.Model.End > len(body) {
			return nil, false, errUnlocatable
		}
		edits[n] = edit{at: in.Located.Model.At, end: in.Located.Model.End, text: quote(upstreamModel)}
		n++
	}
	if w.StreamUsage() && in.Stream && !in.IncludeUsage {
		e, ok, err := usageEdit(body, in.Located.StreamOptions, in.Located.IncludeUsage)
		if err != nil {
			return nil, false, err
		}
		if ok {
			edits[n] = e
			n++
			injectedUsage = true
		}
	}
	if n == 0 {
		return body, false, nil
	}
	es := edits[:n]
	slices.SortFunc(es, func(a, b edit) int { return a.at - b.at })
	size := len(body)
	for _, e := range es {
		size += len(e.text) - (e.end - e.at)
	}
	if inPlace && size <= cap(body) {
		return editInPlace(body, es, size), injectedUsage, nil
	}
	out = make([]byte, 0, size)
	prev := 0
	for _, e := range es {
		out = append(out, body[prev:e.at]...)
		out = append(out, e.text...)
		prev = e.end
	}
	out = append(out, body[prev:]...)
	return out, injectedUsage, nil
}

// editInPlace applies es (at most two, sorted, not overlapping) to body
// within its capacity and returns the result, of length size. The runs of
// bytes between edits move by the sum of the size changes before them:
// those moving right are moved from the last, those moving left from the
// first, so that no run is overwritten before it moved; then the edits'
// texts are written in the gaps.
func editInPlace(body []byte, es []edit, size int) []byte {
	var (
		run   [3]struct{ from, to, shift int }
		prev  int
		shift int
	)
	for k, e := range es {
		run[k] = struct{ from, to, shift int }{prev, e.at, shift}
		shift += len(e.text) - (e.end - e.at)
		prev = e.end
	}
	run[len(es)] = struct{ from, to, shift int }{prev, len(body), shift}
	out := body[:size]
	for k := len(es); k >= 0; k-- {
		if r := run[k]; r.shift > 0 {
			copy(out[r.from+r.shift:], body[r.from:r.to])
		}
	}
	for k := 0; k <= len(es); k++ {
		if r := run[k]; r.shift < 0 {
			copy(out[r.from+r.shift:], body[r.from:r.to])
		}
	}
	for k, e := range es {
		copy(out[e.at+run[k].shift:], e.text)
	}
	return out
}

// usageEdit returns the edit that sets stream_options.include_usage to
// true, given where the body's stream_options value is, and where its
// include_usage value is, which the inspection found once at most. ok is
// false when stream_options is neither absent, null nor an object: the
// upstream will reject such a request anyway.
func usageEdit(body []byte, at, usage Span) (e edit, ok bool, err error) {
	if at.At <= 0 {
		end := lastNonSpace(body)
		if end < 0 || body[end] != '}' {
			return edit{}, false, errUnlocatable
		}
		return edit{at: end, end: end, text: `,"stream_options":` + includeUsage}, true, nil
	}
	if at.End > len(body) || usage.End > at.End || usage.At < 0 {
		return edit{}, false, errUnlocatable
	}
	switch so := body[at.At:at.End]; {
	case string(so) == "null":
		return edit{at: at.At, end: at.End, text: includeUsage}, true, nil
	case so[0] != '{':
		return edit{}, false, nil
	case usage.At > at.At:
		return edit{at: usage.At, end: usage.End, text: "true"}, true, nil
	case isEmptyObject(Str(so)):
		return edit{at: at.At + 1, end: at.At + 1, text: `"include_usage":true`}, true, nil
	}
	return edit{at: at.At + 1, end: at.At + 1, text: `"include_usage":true,`}, true, nil
}

// lastNonSpace is the index of the last non-whitespace byte of b, or -1.
func lastNonSpace(b []byte) int {
	i := len(b) - 1
	for i >= 0 && isSpace(b[i]) {
		i--
	}
	return i
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isEmptyObject reports whether raw is "{" whitespace "}".
func isEmptyObject(raw string) bool {
	for i := 1; i < len(raw)-1; i++ {
		if !isSpace(raw[i]) {
			return false
		}
	}
	return true
}

// quote encodes s as a JSON string.
func quote(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
