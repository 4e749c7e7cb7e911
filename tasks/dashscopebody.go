package tasks

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/providers"
)

// dashScopeInputFields are client fields that belong in DashScope's "input"
// object (reference media of image-to-video models); every other field the
// gateway does not set itself goes into "parameters".
var dashScopeInputFields = map[string]bool{
	"img_url": true, "audio_url": true, "first_frame_url": true, "last_frame_url": true,
}

// dashScopeOwn are the members dashScopeBody sets itself; the others are
// copied as they are. Of a video, it sets the duration too
// (dashScopeOwnVideo).
var (
	dashScopeOwn      = membersOf(memberModel, memberPrompt, memberNegativePrompt, memberSize, memberN, memberSeed)
	dashScopeOwnVideo = dashScopeOwn.with(memberSeconds).with(memberDuration)
)

// dashScopeBody builds {"model","input":{…},"parameters":{…}} from the
// client's fields, copying their raw JSON, in one pass over the body: its
// cost grows with the body's size, not with the square of its members.
func dashScopeBody(c *call, r *request) ([]byte, error) {
	var input, params []byte // members, comma-separated
	input = appendMember(input, `"prompt"`, r.fields[memberPrompt].Raw)
	if r.negativePrompt != "" {
		input = appendMember(input, `"negative_prompt"`, r.fields[memberNegativePrompt].Raw)
	}
	if r.size != "" {
		params = appendMember(params, `"size"`, jsonString(strings.Replace(r.size, "x", "*", 1)))
	}
	if r.n > 0 {
		params = appendMember(params, `"n"`, strconv.Itoa(r.n))
	}
	if r.seed != "" {
		params = appendMember(params, `"seed"`, r.seed)
	}
	if r.seconds > 0 { // asked as "duration" or "seconds": billed as sent
		params = appendMember(params, `"duration"`, strconv.FormatInt(r.seconds, 10))
	}
	own := dashScopeOwn
	if r.route.Kind == providers.KindVideo {
		own = dashScopeOwnVideo
	}
	err := r.extras(c.maxDepth, own, func(key, name, raw []byte) {
		if dashScopeInputFields[string(name)] {
			input = appendMember(input, string(key), string(raw))
			return
		}
		params = appendMember(params, string(key), string(raw))
	})
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(input)+len(params)+len(c.model)+64)
	body = append(body, `{"model":`...)
	body = append(body, jsonString(c.model)...)
	body = append(body, `,"input":{`...)
	body = append(body, input...)
	body = append(body, '}')
	if len(params) > 0 {
		body = append(body, `,"parameters":{`...)
		body = append(body, params...)
		body = append(body, '}')
	}
	return append(body, '}'), nil
}

// appendMember appends `key:raw` to the comma-separated members dst; key
// is a JSON string, quotes included.
func appendMember(dst []byte, key, raw string) []byte {
	if len(dst) > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, key...)
	dst = append(dst, ':')
	return append(dst, raw...)
}

// extras calls fn, in body order, with the key token (quotes included),
// the name and the raw value, read with the nesting limit maxDepth, of every top-level member that is not one of
// own and whose name is made of ASCII letters, digits, "_" and "-" (the
// names DashScope takes); repeats included.
func (r *request) extras(maxDepth int, own MemberSet, fn func(key, name, raw []byte)) error {
	var s jsonlimit.Scanner
	s.Reset(r.body, jsonlimit.OrDefault(maxDepth))
	if t, err := s.Next(); err != nil || t.Kind != jsonlimit.BeginObject {
		return errNotObject
	}
	for {
		k, err := s.Next()
		if err != nil {
			return err
		}
		if k.Kind == jsonlimit.EndObject {
			return nil
		}
		v, err := s.Next()
		if err != nil {
			return err
		}
		end, err := s.Skip(v)
		if err != nil {
			return err
		}
		key := r.body[k.Start:k.End]
		if m, ok := lookupMember(key); ok && own.has(m) {
			continue
		}
		name := key[1 : len(key)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if json.Unmarshal(key, &s) != nil {
				continue
			}
			name = []byte(s)
		}
		if plainName(name) {
			fn(key, name, r.body[v.Start:end])
		}
	}
}

// plainName reports whether a member name is made of ASCII letters,
// digits, "_" and "-", and not empty.
func plainName(name []byte) bool {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return len(name) > 0
}
