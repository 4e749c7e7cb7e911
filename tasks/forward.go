package tasks

import (
	"encoding/json"
	"strconv"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// forwardEdits are the changes forwardBody makes to a client's body.
type forwardEdits struct {
	// model is the upstream model id, set in place of the client's.
	model string
	// drop holds the members OpenAI would reject.
	drop MemberSet
	// seconds, when positive, is the video duration the task is billed
	// for, sent as the string "seconds" (the Videos API takes "4", "8",
	// "12") in place of the first of the client's "seconds" or
	// "duration"; the others are dropped.
	seconds int64
	// defaultSize, if set, is the "size" added when the body has none.
	defaultSize string
}

// forwardBody returns the client's body for the upstream, found in one
// pass and made of spans of body, not a copy: "model" set to e.model
// (added if missing), the members of e.drop removed, "seconds" set to
// e.seconds if positive, "size" added if missing and e.defaultSize is set; every other
// member passes byte for byte, in order, with what separates it from the
// member before it when that one passes too. The body was validated by
// parseRequest with the service's nesting limit, maxDepth. The result
// refers to body, which must stay unchanged while it is sent.
func forwardBody(body []byte, maxDepth int, e forwardEdits) (*upBody, error) {
	model, err := json.Marshal(e.model)
	if err != nil {
		return nil, badRequest(err)
	}
	out := &upBody{segs: make([][]byte, 0, 8)}
	out.add(openBrace)
	var s jsonlimit.Scanner
	s.Reset(body, maxDepth)
	if t, err := s.Next(); err != nil || t.Kind != jsonlimit.BeginObject {
		return nil, badRequest(errNotObject)
	}
	// spanStart, spanEnd: the span of body passing as it is, not yet added
	// (spanEnd < 0: none). A member right after it extends it.
	spanStart, spanEnd := 0, -1
	members := 0
	flush := func() {
		if spanEnd >= 0 {
			out.add(body[spanStart:spanEnd])
			spanEnd = -1
		}
	}
	member := func(key string, raw ...[]byte) {
		flush()
		if members > 0 {
			out.add(comma)
		}
		members++
		out.add(memberKey(key))
		for _, r := range raw {
			out.add(r)
		}
	}
	// seen holds the members of memberNames met so far: a fixed size
	// whatever the number of members, none of which is copied.
	var seen MemberSet
	prevKept := false // the member before passed as it is
	for {
		k, err := s.Next()
		if err != nil {
			return nil, badRequest(err)
		}
		if k.Kind == jsonlimit.EndObject {
			if t, err := s.Next(); err != nil || t.Kind != jsonlimit.Done {
				return nil, badRequest(errNotObject)
			}
			break
		}
		v, err := s.Next()
		if err != nil {
			return nil, badRequest(err)
		}
		end, err := s.Skip(v)
		if err != nil {
			return nil, badRequest(err)
		}
		name, known := lookupMember(body[k.Start:k.End])
		kept := false
		switch {
		case !known:
			kept = true
		case name == memberModel:
			if !seen.has(name) {
				member("model", model)
			}
		case e.drop.has(name):
		case e.seconds > 0 && (name == memberSeconds || name == memberDuration):
			if !seen.has(memberSeconds) && !seen.has(memberDuration) {
				member("seconds", quote, []byte(strconv.FormatInt(e.seconds, 10)), quote)
			}
		default:
			kept = true
		}
		switch {
		case kept && prevKept:
			spanEnd = end // the separator between them passes too
		case kept:
			flush()
			if members > 0 {
				out.add(comma)
			}
			members++
			spanStart, spanEnd = k.Start, end
		}
		prevKept = kept
		if known {
			seen = seen.with(name)
		}
	}
	if !seen.has(memberModel) {
		member("model", model)
	}
	if e.seconds > 0 && !seen.has(memberSeconds) && !seen.has(memberDuration) {
		member("seconds", quote, []byte(strconv.FormatInt(e.seconds, 10)), quote)
	}
	if !seen.has(memberSize) && e.defaultSize != "" {
		size, err := json.Marshal(e.defaultSize)
		if err != nil {
			return nil, badRequest(err)
		}
		member("size", size)
	}
	flush()
	out.add(closeBrace)
	return out, nil
}

// The bytes forwardBody puts between spans of the client's body.
var (
	openBrace  = []byte("{")
	closeBrace = []byte("}")
	comma      = []byte(",")
	quote      = []byte(`"`)
)

// memberKey returns `"key":` for the members forwardBody sets.
func memberKey(key string) []byte {
	switch key {
	case "model":
		return modelKey
	case "seconds":
		return secondsKey
	case "size":
		return sizeKey
	}
	return []byte(`"` + key + `":`)
}

// Keys of the members forwardBody sets.
var (
	modelKey   = []byte(`"model":`)
	secondsKey = []byte(`"seconds":`)
	sizeKey    = []byte(`"size":`)
)

// errNotObject reports a body that is not a JSON object.
var errNotObject = errorString("the request body is not a JSON object")

// errorString is a constant error.
type errorString string

func (e errorString) Error() string { return string(e) }
