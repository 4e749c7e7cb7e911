// Package jsonlimit checks that a JSON text is valid and nests no deeper
// than a limit, without recursion and without allocating.
//
// Recursive validators, gjson's Valid among them, use one stack frame per
// level of nesting: a few megabytes of '[' end the process with a fatal
// stack overflow, which no recover can catch. Check walks the text as a
// forward state machine over an explicit stack of one bit per open
// container, and stops at the first container over the limit. Its accept
// and reject decisions are those of encoding/json's Valid (whose own nesting
// cap is 10000 levels): in particular it accepts any bytes but control
// characters inside strings, valid UTF-8 or not, as encoding/json does.
package jsonlimit

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// DefaultMaxDepth is the nesting limit applied where no configuration sets
// one. Real request and response bodies nest a few levels, tool schemas a
// few dozen at most.
const DefaultMaxDepth = 128

// OrDefault returns the limit n, or DefaultMaxDepth when n is zero or less:
// the reading of a limit left unset in a configuration.
func OrDefault(n int) int {
	if n <= 0 {
		return DefaultMaxDepth
	}
	return n
}

// DepthError is the error of Check for a text that nests deeper than the
// limit.
type DepthError struct {
	// Limit is the deepest nesting allowed.
	Limit int
	// Offset is the index of the opening bracket one level too deep.
	Offset int
}

// Error implements the error interface.
func (e *DepthError) Error() string {
	return fmt.Sprintf("JSON nests deeper than the limit of %d levels", e.Limit)
}

// SyntaxError is the error of Check for a text that is not valid JSON.
type SyntaxError struct {
	// Offset is the index of the first byte that cannot continue a valid
	// text, or the length of a text that ends too early.
	Offset int
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d", e.Offset)
}

// inlineWords is the size, in 64-bit words, of the stack Check keeps in its
// own frame; deeper texts (with limits above 512) grow it on the heap as
// they nest, never beyond the limit.
const inlineWords = 8

// states of Check's loop: what the next token must be.
const (
	stateValue = iota // any value
	stateKey          // an object key
	stateAfter        // what follows a value: a comma, a closing bracket, or the end
)

// Check returns nil when b is one valid JSON value, surrounded by optional
// whitespace, whose arrays and objects nest at most maxDepth levels: `[]`
// and `{}` are one level deep, scalars zero, and a maxDepth below 1 admits
// scalars only. It returns a *DepthError at the first bracket over the limit
// and a *SyntaxError at the first byte that is not valid JSON, whichever
// comes first.
func Check(b []byte, maxDepth int) error {
	var inline [inlineWords]uint64
	stack := inline[:] // bit d is set when container d is an object
	depth, i, state := 0, 0, stateValue
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			if state == stateAfter && depth == 0 {
				return nil
			}
			return &SyntaxError{Offset: i}
		}
		c := b[i]
		switch state {
		case stateValue:
			switch {
			case c == '{' || c == '[':
				if depth >= maxDepth {
					return &DepthError{Limit: maxDepth, Offset: i}
				}
				w, bit := depth>>6, uint64(1)<<(depth&63)
				if w == len(stack) {
					stack = append(stack, 0)
				}
				if c == '{' {
					stack[w] |= bit
					state = stateKey
				} else {
					stack[w] &^= bit
				}
				depth++
				// An empty container closes at once; '{'+2 is '}' and
				// '['+2 is ']'.
				if i = skipSpace(b, i+1); i < len(b) && b[i] == c+2 {
					depth--
					i, state = i+1, stateAfter
				}
				continue
			case c == '"':
				i = stringEnd(b, i+1)
			case c == '-' || c-'0' < 10:
				i = numberEnd(b, i)
			case c == 't':
				i = literalEnd(b, i, "true")
			case c == 'f':
				i = literalEnd(b, i, "false")
			case c == 'n':
				i = literalEnd(b, i, "null")
			default:
				return &SyntaxError{Offset: i}
			}
			if i < 0 {
				return &SyntaxError{Offset: ^i}
			}
			state = stateAfter
		case stateKey:
			if c != '"' {
				return &SyntaxError{Offset: i}
			}
			if i = stringEnd(b, i+1); i < 0 {
				return &SyntaxError{Offset: ^i}
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return &SyntaxError{Offset: i}
			}
			i, state = i+1, stateValue
		case stateAfter:
			if depth == 0 {
				return &SyntaxError{Offset: i} // trailing bytes
			}
			d := depth - 1
			object := stack[d>>6]&(1<<(d&63)) != 0
			switch {
			case c == ',' && object:
				state = stateKey
			case c == ',':
				state = stateValue
			case c == '}' && object, c == ']' && !object:
				depth--
			default:
				return &SyntaxError{Offset: i}
			}
			i++
		}
	}
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// SWAR (SIMD within a register) constants: lo has 1 in every byte, hi the
// top bit of every byte, low7 the other bits.
const (
	lo   = 0x0101010101010101
	hi   = 0x8080808080808080
	low7 = 0x7f7f7f7f7f7f7f7f
)

// stringStops returns a mask with the top bit of every byte of x that ends
// a run of plain string bytes: a quote, a backslash or a control
// character; zero when there is none. The tests are exact for every byte:
// adding to the low seven bits of a byte never carries into the next one.
func stringStops(x uint64) uint64 {
	q := x ^ (lo * '"')
	s := x ^ (lo * '\\')
	notQuote := (q&low7 + low7) | q      // top bit set where q's byte is not zero
	notBackslash := (s&low7 + low7) | s  // likewise for s
	notControl := (x&low7 + lo*0x60) | x // top bit set where x's byte is at least 0x20
	return ^(notQuote & notBackslash & notControl) & hi
}

// stringEndWords is stringEnd eight bytes at a time. Plain bytes are
// skipped eight at a time, and every stop among eight bytes is handled
// from one load: code in chat messages has an escape every twenty bytes or
// so, often several in a row.
func stringEndWords(b []byte, i int) int {
	for i+8 <= len(b) {
		m := stringStops(binary.LittleEndian.Uint64(b[i:]))
		if m == 0 {
			if i+16 > len(b) {
				i += 8
				continue
			}
			if m = stringStops(binary.LittleEndian.Uint64(b[i+8:])); m == 0 {
				i += 16
				continue
			}
			i += 8
		}
		base := i
		for ; m != 0; m &= m - 1 {
			j := base + bits.TrailingZeros64(m)>>3
			if j < i {
				continue // the escaped byte of an escape
			}
			switch b[j] {
			case '"':
				return j + 1
			case '\\':
				if j+1 < len(b) && shortEscape[b[j+1]] {
					i = j + 2
				} else if i = unicodeEscapeEnd(b, j+1); i < 0 {
					return i
				}
			default:
				return ^j // a control character
			}
		}
		i = max(i, base+8)
	}
	for {
		for i < len(b) && b[i] >= 0x20 && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return ^i
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 < len(b) && shortEscape[b[i+1]] {
				i += 2
				continue
			}
			if i = unicodeEscapeEnd(b, i+1); i < 0 {
				return i
			}
		default:
			return ^i // a control character
		}
	}
}

// shortEscape marks the bytes that may follow a backslash, but for u.
var shortEscape = [256]bool{'"': true, '\\': true, '/': true, 'b': true, 'f': true, 'n': true, 'r': true, 't': true}

// unicodeEscapeEnd returns the index past the escape sequence \uXXXX whose
// u is b[i], or the complement of the offset of the byte that breaks it.
func unicodeEscapeEnd(b []byte, i int) int {
	if i >= len(b) || b[i] != 'u' {
		return ^i
	}
	for j := i + 1; j < i+5; j++ {
		if j >= len(b) || !isHex(b[j]) {
			return ^j
		}
	}
	return i + 5
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return c-'0' < 10 || (c|0x20)-'a' < 6
}

// numberEnd returns the index past the number that starts at b[i], or the
// complement of the offset of the byte that breaks it. The grammar is
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return ^i
	case b[i] == '0':
		i++
	case b[i]-'1' < 9:
		i = digitsEnd(b, i+1)
	default:
		return ^i
	}
	if i < len(b) && b[i] == '.' {
		if i++; i >= len(b) || b[i]-'0' >= 10 {
			return ^i
		}
		i = digitsEnd(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i]-'0' >= 10 {
			return ^i
		}
		i = digitsEnd(b, i+1)
	}
	return i
}

// digitsEnd returns the index of the first byte at or after i that is not a
// decimal digit.
func digitsEnd(b []byte, i int) int {
	for i < len(b) && b[i]-'0' < 10 {
		i++
	}
	return i
}

// literalEnd returns the index past the literal lit, which must start at
// b[i], or the complement of the offset of the first byte that differs.
func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	for j := 0; j < len(lit); j++ {
		if i+j >= len(b) || b[i+j] != lit[j] {
			return ^(i + j)
		}
	}
	return i + len(lit)
}
