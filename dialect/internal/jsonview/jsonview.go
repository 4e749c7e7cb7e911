// Package jsonview reads JSON string values out of a decoder's buffer
// without copying them, so that the stream decoders of the provider
// dialects translate an event with no allocation in steady state. gjson
// finds the values; this package turns a found string token into its
// text, aliasing the buffer when the token has no escapes and unescaping
// into a reused scratch buffer when it has.
package jsonview

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// String views b as a string without copying. b must not change while
// the string is in use.
func String(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// Bytes views s as bytes without copying. The bytes must not be written.
func Bytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// Text returns the text of raw, a JSON string token with its quotes (as
// gjson.Result.Raw holds it). A token without escapes is returned as a
// view of raw; one with escapes is unescaped into scratch, which is
// returned grown for reuse. A raw that is not a string token yields nil.
func Text(scratch []byte, raw string) (text, grown []byte) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, scratch
	}
	body := raw[1 : len(raw)-1]
	esc := false
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' {
			esc = true
			break
		}
	}
	if !esc {
		return Bytes(body), scratch
	}
	scratch = AppendUnescaped(scratch[:0], body)
	return scratch, scratch
}

// AppendText is Text for several texts alive at once: a token with
// escapes is unescaped at the end of arena, not over its start, so that
// the texts returned before stay valid until the caller resets arena.
func AppendText(arena []byte, raw string) (text, grown []byte) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return nil, arena
	}
	body := raw[1 : len(raw)-1]
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' {
			start := len(arena)
			arena = AppendUnescaped(arena, body)
			return arena[start:len(arena):len(arena)], arena
		}
	}
	return Bytes(body), arena
}

// AppendUnescaped appends to dst the text of body, the inside of a JSON
// string token, with its escapes resolved. An invalid escape or lone
// surrogate becomes U+FFFD, as encoding/json reads it.
func AppendUnescaped(dst []byte, body string) []byte {
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 >= len(body) {
			dst = append(dst, c)
			continue
		}
		i++
		switch body[i] {
		case '"', '\\', '/':
			dst = append(dst, body[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, n := hex4(body[i+1:])
			i += n
			if utf16.IsSurrogate(r) {
				r2, n2 := rune(-1), 0
				if len(body) > i+2 && body[i+1] == '\\' && body[i+2] == 'u' {
					r2, n2 = hex4(body[i+3:])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 2 + n2
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			dst = utf8.AppendRune(dst, utf8.RuneError)
		}
	}
	return dst
}

// hex4 reads the four hex digits of a \u escape: the rune and how many
// bytes it used (0 and U+FFFD if they are not four hex digits).
func hex4(s string) (rune, int) {
	if len(s) < 4 {
		return utf8.RuneError, 0
	}
	v, err := strconv.ParseUint(s[:4], 16, 32)
	if err != nil {
		return utf8.RuneError, 0
	}
	return rune(v), 4
}
