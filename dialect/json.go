package dialect

import (
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Str views b as a string without copying. The string must not outlive b
// nor be used after b is modified.
func Str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// AppendString appends s to dst as a JSON string, quoted and escaped.
// Invalid UTF-8 is replaced by U+FFFD, as encoding/json does.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hex = "0123456789abcdef"

// AppendBytes appends b to dst as a JSON string, as AppendString does.
func AppendBytes(dst, b []byte) []byte { return AppendString(dst, Str(b)) }

// AppendInt appends n in decimal.
func AppendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// StringBytes returns the value of the JSON string r, found in json, as
// bytes: a slice of json itself when it holds no escapes, else the
// unescaped value appended to scratch. It allocates nothing when scratch
// has room. A value that is not a string yields nil.
func StringBytes(json []byte, r gjson.Result, scratch []byte) (value, grown []byte) {
	if r.Type != gjson.String {
		return nil, scratch
	}
	raw := r.Raw
	if r.Index > 0 && r.Index+len(raw) <= len(json) && len(raw) >= 2 {
		inner := json[r.Index+1 : r.Index+len(raw)-1]
		if !hasEscape(inner) {
			return inner, scratch
		}
	}
	start := len(scratch)
	scratch = append(scratch, r.Str...)
	return scratch[start:], scratch
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}
