package jsonlimit

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStringBlocksAlignment places escapes, runs of backslashes, quotes and
// control characters at every offset around the 64-byte blocks
// stringEndBlocks reads, and wants stringEndWords's result, error offsets
// included.
func TestStringBlocksAlignment(t *testing.T) {
	if !haveStringMasks {
		t.Log("stringEnd reads eight bytes at a time on this CPU; comparing the block logic is not possible")
		return
	}
	pieces := []string{`\n`, `\"`, `\\`, `\\\"`, `\\\\`, `\u00e9`, `\u00`, `\uZZ`, `\x`, "\x01", "\\\x01", `"`, `\`, `\\\`, "é", "\xff"}
	for _, p := range pieces {
		for _, q := range pieces {
			for pre := 50; pre < 80; pre++ {
				for gap := 0; gap < 6; gap++ {
					in := strings.Repeat("a", pre) + p + strings.Repeat("b", gap) + q + strings.Repeat("c", 70) + `"`
					compareStringEnd(t, []byte(in))
					compareStringEnd(t, []byte(in[:pre+len(p)+gap+len(q)])) // cut short
				}
			}
		}
	}
}

// TestStringBlocksRandom compares the two on random strings dense in
// backslashes, quotes and escapes, at every start offset.
func TestStringBlocksRandom(t *testing.T) {
	if !haveStringMasks {
		t.Log("no SIMD string masks on this CPU")
		return
	}
	alphabet := []string{"a", "b", `\`, `\\`, `\n`, `\"`, `"`, `\u`, "0", "f", "G", "\x1f", " ", "é"}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 3000; n++ {
		var sb strings.Builder
		for sb.Len() < 64+rng.IntN(300) {
			w := alphabet[rng.IntN(len(alphabet))]
			if w == `"` || w == "\x1f" {
				if rng.IntN(8) != 0 {
					continue // keep strings long enough to span blocks
				}
			}
			sb.WriteString(w)
		}
		b := []byte(sb.String())
		for i := 0; i < len(b) && i < 70; i++ {
			compareStringEndAt(t, b, i)
		}
	}
}

// FuzzStringEnd compares stringEndBlocks with stringEndWords.
func FuzzStringEnd(f *testing.F) {
	f.Add([]byte(strings.Repeat(`ab\n\"\\`, 20) + `"`))
	f.Add([]byte(strings.Repeat(`\`, 65) + `"x"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !haveStringMasks {
			return
		}
		for i := 0; i < len(b) && i < 8; i++ {
			compareStringEndAt(t, b, i)
		}
	})
}

// compareStringEnd compares both string scans of b from offset 0.
func compareStringEnd(t *testing.T, b []byte) {
	t.Helper()
	compareStringEndAt(t, b, 0)
}

// compareStringEndAt compares both string scans of b from offset i.
func compareStringEndAt(t *testing.T, b []byte, i int) {
	t.Helper()
	want := stringEndWords(b, i)
	got := want
	if len(b)-i >= 64 {
		got = stringEndBlocks(b, i)
	}
	if got != want {
		t.Fatalf("string %q from %d: blocks give %d, words %d", b, i, got, want)
	}
}

// TestStringMasksEveryByte checks stringMasks's four bits for every byte
// value at every position of a block.
func TestStringMasksEveryByte(t *testing.T) {
	if !haveStringMasks {
		t.Log("no SIMD string masks on this CPU")
		return
	}
	bit := func(ok bool, pos int) uint64 {
		if ok {
			return 1 << pos
		}
		return 0
	}
	buf := make([]byte, 64)
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 64; pos++ {
			for k := range buf {
				buf[k] = 'a'
			}
			buf[pos] = byte(c)
			q, bs, ctl, short := stringMasks(&buf[0])
			wantShort := bit(shortEscape[c], pos)
			for k := range buf {
				if k != pos && shortEscape['a'] {
					wantShort |= 1 << k
				}
			}
			if q != bit(c == '"', pos) || bs != bit(c == '\\', pos) || ctl != bit(c < 0x20, pos) || short != wantShort {
				t.Fatalf("byte %#x at %d: masks %#x %#x %#x %#x", c, pos, q, bs, ctl, short)
			}
		}
	}
	for c := 0; c < 256; c++ { // after a backslash, across the block's end
		for pre := 60; pre < 68; pre++ {
			in := strings.Repeat("a", pre) + `\` + string([]byte{byte(c)}) + "0123" + strings.Repeat("z", 70) + `"`
			compareStringEnd(t, []byte(in))
		}
	}
}
