package tapcore

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
)

// DataField locates the value of the first "data:" line of an event. multi
// is true when the event has several data lines. a is -1 when it has none.
func DataField(ev []byte) (a, b int, multi bool) {
	a = -1
	for i := 0; i < len(ev); {
		j := bytes.IndexByte(ev[i:], '\n')
		end := len(ev)
		if j >= 0 {
			end = i + j
		}
		line := ev[i:end]
		if bytes.HasPrefix(line, []byte("data:")) {
			if a >= 0 {
				return a, b, true
			}
			a = i + 5
			if a < end && ev[a] == ' ' {
				a++
			}
			b = end
			if b > a && ev[b-1] == '\r' {
				b--
			}
		}
		i = end + 1
	}
	return a, b, false
}

// JoinData appends the data lines of ev to dst, joined by newlines, as the
// SSE specification does.
func JoinData(dst, ev []byte) []byte {
	first := true
	for len(ev) > 0 {
		line := ev
		if j := bytes.IndexByte(ev, '\n'); j >= 0 {
			line, ev = ev[:j], ev[j+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if !first {
				dst = append(dst, '\n')
			}
			first = false
			dst = append(dst, bytes.TrimPrefix(v, []byte{' '})...)
		}
	}
	return dst
}

// clean reports whether obj is an object whose members are all among
// keys, with string values that apierror.Scrub leaves as they are.
// Members that are objects are left to the caller to check.
func Clean(obj gjson.Result, keys ...string) bool {
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

// ReplaceData returns ev with its data lines replaced by one holding
// data, its other lines and its end kept.
func ReplaceData(ev, data []byte) []byte {
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

// MaxUsageDepth bounds the nesting UsageMember merges: a usage object's
// details are two levels deep.
const MaxUsageDepth = 4

// UsageMember returns the usage object named key in obj. An upstream that
// repeats it, or repeats a member inside it ("prompt_tokens" twice), leaves
// the reader free to pick a copy: the first (gjson, the normalizers), the
// last (Python's json, JavaScript's JSON.parse, Go's encoding/json), or
// either. The gateway bills the largest: the copies merge into one object
// holding the largest value of each number, so the bill is never below
// what any client of the answer sees, nor below any count the provider
// reported. An object without repeats is returned as it is.
func UsageMember(obj gjson.Result, key string) gjson.Result {
	var first gjson.Result
	copies := 0
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key {
			if copies == 0 {
				first = v
			}
			copies++
		}
		return true
	})
	if copies == 0 || copies == 1 && !Repeats(first, MaxUsageDepth) {
		return first
	}
	m := map[string]any{}
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key && v.IsObject() {
			mergeMax(m, v, MaxUsageDepth)
		}
		return true
	})
	b, err := json.Marshal(m)
	if err != nil {
		return first
	}
	return gjson.ParseBytes(b)
}

// repeats reports whether obj, or an object inside it down to depth, has
// a member name twice.
func Repeats(obj gjson.Result, depth int) bool {
	if !obj.IsObject() || depth == 0 {
		return false
	}
	seen := make(map[string]bool, 8)
	dup := false
	obj.ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] || Repeats(v, depth-1) {
			dup = true
			return false
		}
		seen[k.Str] = true
		return true
	})
	return dup
}

// mergeMax merges obj into m: of two numbers the larger stays, objects
// merge the same way down to depth, and any other value is the last one
// unless a number came before it.
func mergeMax(m map[string]any, obj gjson.Result, depth int) {
	obj.ForEach(func(k, v gjson.Result) bool {
		switch {
		case v.Type == gjson.Number:
			if old, ok := m[k.Str].(json.Number); !ok || v.Float() > mustFloat(old) {
				m[k.Str] = json.Number(v.Raw)
			}
		case v.IsObject() && depth > 1:
			sub, ok := m[k.Str].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[k.Str] = sub
			}
			mergeMax(sub, v, depth-1)
		default:
			if _, ok := m[k.Str].(json.Number); !ok {
				m[k.Str] = json.RawMessage(v.Raw)
			}
		}
		return true
	})
}

// mustFloat reads a number mergeMax stored.
func mustFloat(n json.Number) float64 {
	f, _ := n.Float64()
	return f
}
