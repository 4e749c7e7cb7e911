package mockcache

import (
	"strconv"
	"testing"
)

// TestRemember: a prefix is a cache write the first time and a read
// after, per model; past the bound the memory starts again.
func TestRemember(t *testing.T) {
	var p Prefixes
	if p.Remember("m", "system") {
		t.Fatal("first sight reported cached")
	}
	if !p.Remember("m", "system") {
		t.Fatal("second sight not cached")
	}
	if p.Remember("other", "system") {
		t.Fatal("another model's prefix reported cached")
	}
	for i := 0; i < maxCached; i++ {
		p.Remember("m", strconv.Itoa(i))
	}
	if p.Remember("m", "system") {
		t.Fatal("the memory was not bounded")
	}
}
