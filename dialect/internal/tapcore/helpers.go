package tapcore

import (
	"bytes"
	"unsafe"

	"github.com/tidwall/gjson"
)

// TailKeep is how much of the end of a body or event too large to hold is
// kept to find its usage.
const TailKeep = 64 << 10

// Str views b as a string without copying. The string must not outlive b
// nor be used after b is modified.
func Str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// RawBytes views a result's raw JSON as bytes without copying; they must
// not be modified.
func RawBytes(r gjson.Result) []byte {
	return unsafe.Slice(unsafe.StringData(r.Raw), len(r.Raw))
}

// Present reports whether obj has a non-null key.
func Present(obj gjson.Result, key string) bool {
	r := obj.Get(key)
	return r.Exists() && r.Type != gjson.Null
}

// EndsEvent reports whether b ends with an SSE event's terminator.
func EndsEvent(b []byte) bool {
	return bytes.HasSuffix(b, []byte("\n\n")) || bytes.HasSuffix(b, []byte("\r\n\r\n")) || bytes.HasSuffix(b, []byte("\r\r"))
}

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipSpace(b []byte, i int) int {
	for i < len(b) && IsSpace(b[i]) {
		i++
	}
	return i
}

// IsSpace reports JSON whitespace.
func IsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
