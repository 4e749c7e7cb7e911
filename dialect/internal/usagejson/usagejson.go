// Package usagejson reads the token counts of a provider's usage object:
// the small helpers the dialects' usage normalisers share. The usage comes
// from upstreams, so every read is bounded and clamped.
package usagejson

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// errNotObject is returned for a usage payload that is not a JSON object.
var errNotObject = errors.New("usage is not a json object")

// Members sets out[i] to the first member of obj named keys[i], in one
// pass over obj; a gjson Get per key would read obj once per key. out is
// left as it is for a key obj lacks, or when obj is not an object.
func Members(obj gjson.Result, keys []string, out []gjson.Result) {
	if !obj.IsObject() {
		return
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, key := range keys {
			if k.Str == key && !out[i].Exists() {
				out[i] = v
				break
			}
		}
		return true
	})
}

// ParseObject checks that b is a JSON object, nested no deeper than
// jsonlimit.DefaultMaxDepth, and parses it without copying: the result
// aliases b and must not outlive it. The usage comes from upstreams, and a
// recursive validator would overflow the stack on a deep one.
func ParseObject(b []byte) (gjson.Result, error) {
	if err := jsonlimit.Check(b, jsonlimit.DefaultMaxDepth); err != nil {
		return gjson.Result{}, fmt.Errorf("usage: %w", err)
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	r := gjson.Parse(s)
	if !r.IsObject() {
		return gjson.Result{}, errNotObject
	}
	return r, nil
}

// Count reads a token count: a number (or a numeric string), zero when
// missing, null or negative, and at most billing.MaxTokenCount.
func Count(r gjson.Result) int64 {
	if r.Type != gjson.Number && r.Type != gjson.String {
		return 0
	}
	return min(max(r.Int(), 0), billing.MaxTokenCount)
}

// FirstCount returns the count of the first of paths present in obj.
func FirstCount(obj gjson.Result, paths ...string) (int64, bool) {
	for _, p := range paths {
		if n, ok := FirstPresent(obj.Get(p)); ok {
			return n, true
		}
	}
	return 0, false
}

// FirstPresent returns the count of the first of rs that is present and
// not null.
func FirstPresent(rs ...gjson.Result) (int64, bool) {
	for _, r := range rs {
		if r.Exists() && r.Type != gjson.Null {
			return Count(r), true
		}
	}
	return 0, false
}

// Ephemeral sums a cache_creation breakdown object; ok is false when
// neither of its fields is present.
func Ephemeral(cc gjson.Result) (int64, bool) {
	if !cc.IsObject() {
		return 0, false
	}
	m5, ok5 := FirstCount(cc, "ephemeral_5m_input_tokens")
	h1, ok1 := FirstCount(cc, "ephemeral_1h_input_tokens")
	return m5 + h1, ok5 || ok1
}

// OneHour returns the ephemeral_1h_input_tokens of the first of the
// cache_creation breakdowns ccs that has them, or zero.
func OneHour(ccs ...gjson.Result) int64 {
	for _, cc := range ccs {
		if cc.IsObject() {
			if n, ok := FirstCount(cc, "ephemeral_1h_input_tokens"); ok {
				return n
			}
		}
	}
	return 0
}
