package holds

import (
	"slices"
	"testing"
)

func TestSet(t *testing.T) {
	s := New[int]()
	s.Keep("a", 1)
	s.Keep("b", 2)
	s.Keep("b", 3)
	if n := s.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	ids := s.IDs()
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("IDs = %v", ids)
	}
	for _, tc := range []struct {
		id   string
		want int
		ok   bool
	}{
		{"b", 3, true},  // the last kept
		{"b", 0, false}, // taken once only
		{"c", 0, false}, // never kept
		{"a", 1, true},
	} {
		if got, ok := s.Take(tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("Take(%q) = %d, %v; want %d, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len after taking all = %d", n)
	}
}
