package gateway

import (
	"context"
	"errors"
	"testing"
	"time"
)

// failingStore refuses writes, and counts them.
type failingStore struct {
	writes int
}

func (f *failingStore) Probe(context.Context) error {
	f.writes++
	return errors.New("read-only file system")
}

// TestStoreProbe: the probe reports the store's refusal, and writes at
// most once per interval however often it is asked.
func TestStoreProbe(t *testing.T) {
	s := &failingStore{}
	p := new(Probe)
	for range 3 {
		if err := p.Check(context.Background(), s); err == nil {
			t.Fatal("a refused write passed the probe")
		}
	}
	if s.writes != 1 {
		t.Errorf("%d probe writes, want 1 within the interval", s.writes)
	}
	p.at = time.Now().Add(-probeInterval)
	_ = p.Check(context.Background(), s)
	if s.writes != 2 {
		t.Errorf("%d probe writes after the interval, want 2", s.writes)
	}
}
