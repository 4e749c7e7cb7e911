package jsonlimit

import "math/bits"

// evenBits has every even bit set: the positions a run of backslashes
// starting at an even bit escapes the byte after, for an odd length.
const evenBits = 0x5555555555555555

// stringEnd returns the index past the closing quote of the string whose
// contents start at b[i], or the complement (^) of the offset of the first
// byte that breaks it. As in encoding/json, any byte from 0x20 up may appear
// unescaped, including bytes that are not valid UTF-8. Where the CPU can,
// it looks at 64 bytes at a time (stringEndBlocks); otherwise at eight.
func stringEnd(b []byte, i int) int {
	if haveStringMasks && len(b)-i >= 64 {
		return stringEndBlocks(b, i)
	}
	return stringEndWords(b, i)
}

// stringEndBlocks is stringEnd 64 bytes at a time, in the manner of
// simdjson: one bit per byte for the quotes, the backslashes, the control
// characters and the short escapes' letters of a block (stringMasks), the
// bytes escaped by a backslash from the runs of backslashes, without a
// branch; the string ends at the first quote not escaped, or breaks at the
// first control character. Only escaped bytes that are not short escapes
// (a \u, or an error) are looked at one by one. Its results are
// stringEndWords's, to the error offset.
func stringEndBlocks(b []byte, i int) int {
	var carry uint64 // 1 when a block's first byte is escaped by the block before
	for i+64 <= len(b) {
		quote, backslash, control, short := stringMasks(&b[i])
		backslash &^= carry
		follows := backslash<<1 | carry
		oddStarts := backslash &^ evenBits &^ follows
		evenSequences, c := bits.Add64(oddStarts, backslash, 0)
		escaped := (evenBits ^ evenSequences<<1) & follows
		carry = c
		stop := quote&^escaped | control
		check := escaped &^ short
		if stop != 0 {
			check &= 1<<bits.TrailingZeros64(stop) - 1
		}
		for ; check != 0; check &= check - 1 {
			if e := unicodeEscapeEnd(b, i+bits.TrailingZeros64(check)); e < 0 {
				return e
			}
		}
		if stop != 0 {
			j := i + bits.TrailingZeros64(stop)
			if b[j] == '"' {
				return j + 1
			}
			return ^j // a control character
		}
		i += 64
	}
	if carry != 0 {
		switch {
		case i >= len(b):
			return ^i
		case shortEscape[b[i]]:
			i++
		default:
			if i = unicodeEscapeEnd(b, i); i < 0 {
				return i
			}
		}
	}
	return stringEndWords(b, i)
}
