package chatproxy

import (
	"bytes"
	"net/http"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/caddy-air/caddy-air/apierror"
)

// scrubEvent returns an upstream's error event, ev, with its data rebuilt
// the way an error status's body is (apierror.UpstreamBody): OpenAI's
// {"error":{…}} chunk and Anthropic's error event keep only the error's
// type, code, param and message, scrubbed of account ids and
// credentials; a Responses "error" event keeps its type, code, message,
// param and sequence_number, and a "response.failed" its response with
// response.error's code and message scrubbed. The event's other lines
// (event:, id:) are kept.
func scrubEvent(p Protocol, ev []byte) []byte {
	payload := joinData(nil, ev)
	root := gjson.ParseBytes(payload)
	var data []byte
	switch p {
	case OpenAI:
		e := root.Get("error")
		if clean(e, "message", "type", "code", "param") {
			return ev
		}
		// The chunk's other members (a last delta) stay.
		rebuilt := gjson.GetBytes(apierror.UpstreamBody(http.StatusInternalServerError, payload, false), "error")
		data, _ = sjson.SetRawBytes(payload, "error", []byte(rebuilt.Raw))
	case Anthropic:
		if clean(root, "type", "error", "request_id") && clean(root.Get("error"), "type", "message") {
			return ev
		}
		data = apierror.UpstreamBody(http.StatusInternalServerError, payload, true)
	case Responses:
		if root.Get("type").Str == evFailed {
			if e := root.Get("response.error"); e.Type == gjson.Null || clean(e, "code", "message") {
				return ev
			}
		} else if clean(root, "type", "code", "message", "param", "sequence_number") {
			return ev
		}
		data = scrubResponsesError(payload)
	default:
		return ev
	}
	return replaceData(ev, data)
}

// clean reports whether obj is an object whose members are all among
// keys, with string values that apierror.Scrub leaves as they are.
// Members that are objects are left to the caller to check.
func clean(obj gjson.Result, keys ...string) bool {
	if !obj.IsObject() {
		return false
	}
	ok := true
	obj.ForEach(func(k, v gjson.Result) bool {
		known := false
		for _, key := range keys {
			known = known || k.Str == key
		}
		if !known || v.Type == gjson.String && apierror.Scrub(v.Str) != v.Str {
			ok = false
		}
		return ok
	})
	return ok
}

// scrubResponsesError scrubs a Responses stream's error or
// response.failed event.
func scrubResponsesError(payload []byte) []byte {
	root := gjson.ParseBytes(payload)
	if root.Get("type").Str == evFailed {
		out := payload
		for _, path := range []string{"response.error.message", "response.error.code"} {
			if v := root.Get(path); v.Type == gjson.String {
				out, _ = sjson.SetBytes(out, path, apierror.Scrub(v.Str))
			}
		}
		return out
	}
	f := apierror.ReadUpstream(http.StatusInternalServerError, payload)
	out := []byte(`{"type":"error"}`)
	for _, kv := range [][2]string{{"code", f.Code}, {"message", f.Message}, {"param", f.Param}} {
		if kv[1] != "" {
			out, _ = sjson.SetBytes(out, kv[0], kv[1])
		} else {
			out, _ = sjson.SetRawBytes(out, kv[0], []byte("null"))
		}
	}
	if n := root.Get("sequence_number"); n.Type == gjson.Number {
		out, _ = sjson.SetRawBytes(out, "sequence_number", []byte(n.Raw))
	}
	return out
}

// replaceData returns ev with its data lines replaced by one holding
// data, its other lines and its end kept.
func replaceData(ev, data []byte) []byte {
	out := make([]byte, 0, len(ev)+len(data))
	done := false
	for rest := ev; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = nil
		}
		if !bytes.HasPrefix(line, []byte("data:")) {
			out = append(out, line...)
			continue
		}
		if done {
			continue
		}
		done = true
		out = append(append(append(out, "data: "...), data...), '\n')
	}
	return out
}
