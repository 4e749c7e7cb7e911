package chatproxy

import (
	"context"
	"testing"
	"time"
)

// TestAttemptWatchdog ticks an attempt's watchdog by hand: reads keep it
// alive, and idleTicks ticks in a row without one cut it.
func TestAttemptWatchdog(t *testing.T) {
	at := newAttempt(context.Background(), time.Hour) // its own ticks are 15 minutes away
	defer at.close()
	for i, step := range []struct {
		read bool
		cut  bool // after this tick
	}{
		{read: true}, {}, {}, {}, // three quiet ticks after a read
		{read: true}, {}, {}, {}, // a read starts the count again
		{cut: true}, // the fourth quiet tick in a row
	} {
		if step.read {
			at.read()
			at.read()
		}
		at.tick()
		if cut := context.Cause(at.ctx) == errTimeout; cut != step.cut {
			t.Fatalf("Test %d: cut %v, want %v", i, cut, step.cut)
		}
	}
	at.tick() // a tick after the cut changes nothing
	if context.Cause(at.ctx) != errTimeout {
		t.Errorf("cause %v, want errTimeout", context.Cause(at.ctx))
	}
}
