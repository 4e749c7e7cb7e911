package jsonlimit

import "golang.org/x/sys/cpu"

// haveStringMasks reports whether stringMasks may be called: it needs AVX2.
var haveStringMasks = cpu.X86.HasAVX2

// stringMasks returns one bit per byte of the 64 bytes at p, the lowest bit
// for p[0]: set in quote for '"', in backslash for '\\', in control for the
// bytes below 0x20, in short for the bytes that may follow a backslash but
// for u: " \ / b f n r t. Implemented in stringmask_amd64.s.
//
//go:noescape
func stringMasks(p *byte) (quote, backslash, control, short uint64)
