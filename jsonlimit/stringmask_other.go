//go:build !amd64

package jsonlimit

// haveStringMasks is false: stringEnd reads eight bytes at a time.
const haveStringMasks = false

// stringMasks is never called where haveStringMasks is false.
func stringMasks(p *byte) (quote, backslash, control, short uint64) {
	panic("jsonlimit: stringMasks without SIMD")
}
