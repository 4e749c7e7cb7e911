package tasks

import (
	"bytes"
	"encoding/json"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// forwardEdits are the changes forwardBody makes to a client's body.
type forwardEdits struct {
	// model is the upstream model id, set in place of the client's.
	model string
	// drop names the members OpenAI would reject.
	drop []string
	// secondsAsString writes a numeric "seconds" as a string: the Videos
	// API takes "4", "8", "12".
	secondsAsString bool
	// defaultSize, if set, is the "size" added when the body has none.
	defaultSize string
}

// forwardBody returns the client's body for the upstream, built in one
// pass into one new slice: "model" set to e.model (added if missing), the
// members of e.drop removed, "seconds" quoted if asked, "size" added if
// missing and e.defaultSize is set; every other member
// is copied byte for byte, in order. The body was validated by
// parseRequest with the service's nesting limit, maxDepth.
func forwardBody(body []byte, maxDepth int, e forwardEdits) ([]byte, error) {
	model, err := json.Marshal(e.model)
	if err != nil {
		return nil, badRequest(err)
	}
	out := make([]byte, 0, len(body)+len(model)+16)
	out = append(out, '{')
	var s jsonlimit.Scanner
	s.Reset(body, maxDepth)
	if t, err := s.Next(); err != nil || t.Kind != jsonlimit.BeginObject {
		return nil, badRequest(errNotObject)
	}
	member := func(key string, raw []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, key...)
		out = append(out, `":`...)
		out = append(out, raw...)
	}
	seen := map[string]bool{}
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
		name := memberName(body[k.Start:k.End])
		switch {
		case name == "model":
			if !seen[name] {
				member("model", model)
			}
		case dropped(name, e.drop):
		case name == "seconds" && e.secondsAsString && v.Kind == jsonlimit.Number:
			if !seen[name] {
				member("seconds", append(append([]byte{'"'}, body[v.Start:v.End]...), '"'))
			}
		default:
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, body[k.Start:end]...)
		}
		seen[name] = true
	}
	if !seen["model"] {
		member("model", model)
	}
	if !seen["size"] && e.defaultSize != "" {
		size, err := json.Marshal(e.defaultSize)
		if err != nil {
			return nil, badRequest(err)
		}
		member("size", size)
	}
	return append(out, '}'), nil
}

// memberName returns the name a key token (quotes included) spells,
// unescaped when it holds escapes.
func memberName(key []byte) string {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1])
	}
	var s string
	if json.Unmarshal(key, &s) != nil {
		return string(key)
	}
	return s
}

// dropped reports whether name is one of drop.
func dropped(name string, drop []string) bool {
	for _, d := range drop {
		if name == d {
			return true
		}
	}
	return false
}

// errNotObject reports a body that is not a JSON object.
var errNotObject = errorString("the request body is not a JSON object")

// errorString is a constant error.
type errorString string

func (e errorString) Error() string { return string(e) }
