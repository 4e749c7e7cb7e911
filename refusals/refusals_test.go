package refusals

import (
	"fmt"
	"sync"
	"testing"
)

func TestLogKeepsTheLastNewestFirst(t *testing.T) {
	l := New(3)
	for i := range 5 {
		l.Add(Entry{ID: fmt.Sprintf("req_%d", i), User: []string{"ann", "bob"}[i%2], Status: 401})
	}
	ids := func(es []Entry) string {
		s := ""
		for _, e := range es {
			s += e.ID + " "
		}
		return s
	}
	for i, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "req_4 req_3 req_2 "},
		{Filter{User: "ann"}, "req_4 req_2 "},
		{Filter{ID: "req_3"}, "req_3 "},
		{Filter{ID: "req_0"}, ""}, // dropped: the log keeps 3
		{Filter{Limit: 1}, "req_4 "},
	} {
		if got := ids(l.List(tc.f)); got != tc.want {
			t.Errorf("Test %d: %+v: %q, want %q", i, tc.f, got, tc.want)
		}
	}
	if got := New(2).List(Filter{}); got == nil || len(got) != 0 {
		t.Errorf("an empty log lists %v, want an empty list", got)
	}
}

func TestLogConcurrentAdds(t *testing.T) {
	l := New(100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				l.Add(Entry{ID: fmt.Sprintf("%d-%d", g, i)})
			}
		})
	}
	wg.Wait()
	if n := len(l.List(Filter{})); n != 100 {
		t.Errorf("%d entries, want 100", n)
	}
}

// BenchmarkAdd is the cost of recording one refusal, as a flood of bad
// keys makes them from every core.
func BenchmarkAdd(b *testing.B) {
	l := New(1000)
	e := Entry{ID: "req_0123456789abcdef01234567", Endpoint: "chat_completions", Status: 401, Code: "invalid_api_key", Message: "unknown API key"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Add(e)
		}
	})
}
