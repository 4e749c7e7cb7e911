package caddymodule

import (
	"strings"
	"testing"
)

func TestReadAllSized(t *testing.T) {
	for _, tc := range []struct {
		name     string
		body     string
		declared int64
	}{
		{"declared length", strings.Repeat("a", 1000), 1000},
		{"unknown length", strings.Repeat("b", 70_000), -1},
		{"declared more than sent", "short", 1 << 30},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAllSized(strings.NewReader(tc.body), tc.declared)
			if err != nil || string(got) != tc.body {
				t.Fatalf("read %d bytes, err %v; want the %d-byte body", len(got), err, len(tc.body))
			}
			// A client's declared length never buys more than maxPresize of
			// memory up front.
			if tc.declared > maxPresize && cap(got) > 2*maxPresize {
				t.Errorf("buffer of %d bytes for a %d-byte body declared as %d", cap(got), len(tc.body), tc.declared)
			}
		})
	}
}
