package chatproxy

import (
	"encoding/json"

	"github.com/tidwall/gjson"
)

// maxUsageDepth bounds the nesting usageMember merges: a usage object's
// details are two levels deep.
const maxUsageDepth = 4

// usageMember returns the usage object named key in obj. An upstream that
// repeats it, or repeats a member inside it ("prompt_tokens" twice), leaves
// the reader free to pick a copy: the first (gjson, the normalizers), the
// last (Python's json, JavaScript's JSON.parse, Go's encoding/json), or
// either. The gateway bills the largest: the copies merge into one object
// holding the largest value of each number, so the bill is never below
// what any client of the answer sees, nor below any count the provider
// reported. An object without repeats is returned as it is.
func usageMember(obj gjson.Result, key string) gjson.Result {
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
	if copies == 0 || copies == 1 && !repeats(first, maxUsageDepth) {
		return first
	}
	m := map[string]any{}
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.Str == key && v.IsObject() {
			mergeMax(m, v, maxUsageDepth)
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
func repeats(obj gjson.Result, depth int) bool {
	if !obj.IsObject() || depth == 0 {
		return false
	}
	seen := make(map[string]bool, 8)
	dup := false
	obj.ForEach(func(k, v gjson.Result) bool {
		if seen[k.Str] || repeats(v, depth-1) {
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
