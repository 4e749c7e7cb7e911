package holds

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// hold is a Hold that records how it ended.
type hold struct {
	name  string
	ended []string
}

func (h *hold) Charge(_ context.Context, rec billing.Record) error {
	h.ended = append(h.ended, "charge "+rec.ID)
	if rec.ID == "fail" {
		return errors.New("ledger down")
	}
	return nil
}
func (h *hold) Release() { h.ended = append(h.ended, "release") }
func (h *hold) Cancel()  { h.ended = append(h.ended, "cancel") }

func TestSet(t *testing.T) {
	s := New()
	h1, h2, h3 := &hold{name: "1"}, &hold{name: "2"}, &hold{name: "3"}
	s.Keep("a", h1)
	s.Keep("b", h2)
	s.Keep("b", h3)
	s.Keep("c", nil)
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
		want Hold
		ok   bool
	}{
		{"b", h3, true},   // the last kept
		{"b", nil, false}, // taken once only
		{"c", nil, false}, // never kept
		{"a", h1, true},
	} {
		if got, ok := s.Take(tc.id); got != tc.want || ok != tc.ok {
			t.Errorf("Take(%q) = %v, %v; want %v, %v", tc.id, got, ok, tc.want, tc.ok)
		}
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len after taking all = %d", n)
	}
}

// TestEndsOnce checks that Charge and Release end a kept hold once, and
// report a hold that is not kept (already ended) as such.
func TestEndsOnce(t *testing.T) {
	ctx := context.Background()
	s := New()
	h := &hold{}
	s.Keep("t1", h)
	if held, err := s.Charge(ctx, "t1", billing.Record{ID: "t1"}); !held || err != nil {
		t.Fatalf("Charge = %v, %v; want held, no error", held, err)
	}
	if held, _ := s.Charge(ctx, "t1", billing.Record{ID: "t1"}); held {
		t.Error("a second Charge found the hold still kept")
	}
	s.Release("t1")
	if !slices.Equal(h.ended, []string{"charge t1"}) {
		t.Errorf("hold ended %v, want charged once", h.ended)
	}
	f := &hold{}
	s.Keep("fail", f)
	if held, err := s.Charge(ctx, "fail", billing.Record{ID: "fail"}); !held || err == nil {
		t.Errorf("a failed Charge = %v, %v; want held and its error", held, err)
	}
	if s.Len() != 0 {
		t.Error("a hold whose charge failed is still kept")
	}
}

func TestSweep(t *testing.T) {
	s := New()
	ended, running, unreadable := &hold{}, &hold{}, &hold{}
	s.Keep("ended", ended)
	s.Keep("running", running)
	s.Keep("unreadable", unreadable)
	var failed []string
	s.Sweep(context.Background(), func(_ context.Context, id string) (bool, error) {
		switch id {
		case "ended":
			return true, nil
		case "unreadable":
			return true, errors.New("store down")
		}
		return false, nil
	}, func(id string, err error) { failed = append(failed, id) })
	if !slices.Equal(ended.ended, []string{"release"}) || len(running.ended) != 0 || len(unreadable.ended) != 0 {
		t.Errorf("ended %v, running %v, unreadable %v; want only the ended job's hold released",
			ended.ended, running.ended, unreadable.ended)
	}
	if !slices.Equal(failed, []string{"unreadable"}) || s.Len() != 2 {
		t.Errorf("failed %v, %d kept; want the unreadable job reported and two holds kept", failed, s.Len())
	}
}
