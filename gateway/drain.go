package gateway

import (
	"sync"

	"go.uber.org/zap"
)

// drain counts the exchanges in flight through a Shared, so that the Shared
// closes only once the last of them has ended. Caddy stops a config's apps
// in no set order: when the process stops, the air app may stop while the
// HTTP servers still finish their open requests within grace_period, and
// those requests must still settle their records in the ledger (closing
// it under them answered every one with ledger_unavailable and left its
// upstream's work unbilled). A Shared whose last config let go therefore
// closes at once when nothing is in flight, else when the last exchange
// ends; meanwhile it keeps serving, and a config that starts on the same
// storage takes it back (resume) instead of opening the storage a second
// time.
type drain struct {
	mu       sync.Mutex
	inflight int
	// closing is set once the last config let go; close then runs when
	// inflight falls to zero.
	closing bool
	// done is set once close has begun: no exchange enters afterwards.
	done  bool
	close func()
}

// enter counts an exchange in, or reports false once the Shared is closed
// (or closing down for good).
func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return false
	}
	d.inflight++
	return true
}

// leave counts an exchange out; the last one out of a closing Shared runs
// its close, before it returns.
func (d *drain) leave() {
	d.mu.Lock()
	d.inflight--
	run := d.closing && d.inflight == 0 && !d.done
	if run {
		d.done = true
	}
	fn := d.close
	d.mu.Unlock()
	if run {
		fn()
	}
}

// shut marks the Shared closing. It reports true when nothing is in flight:
// the caller closes the Shared now, and nothing enters it afterwards.
// Otherwise close runs when the last exchange leaves, and shut returns the
// number still in flight.
func (d *drain) shut(close func()) (now bool, inflight int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight == 0 {
		d.done = true
		return true, 0
	}
	d.closing, d.close = true, close
	return false, d.inflight
}

// resume takes a closing Shared back into use, or reports false when its
// close has already begun.
func (d *drain) resume() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return false
	}
	d.closing, d.close = false, nil
	return true
}

// draining holds, by key (Options.Key), the Shared whose last config let
// go while exchanges were still in flight through them.
var draining sync.Map // key → *Shared

// Resume returns the Shared of key that is still draining, taken back
// into use, or nil: a config that starts on the same storage shares it
// instead of opening the storage a second time.
func Resume(key string) *Shared {
	v, ok := draining.Load(key)
	if !ok {
		return nil
	}
	sh := v.(*Shared)
	if !sh.drain.resume() {
		return nil
	}
	draining.CompareAndDelete(key, sh)
	return sh
}

// Enter counts an exchange in flight through s, which keeps s open until
// the matching Leave, or reports false once s is closed (or closing down
// for good): the request is then refused.
func (s *Shared) Enter() bool { return s.drain.enter() }

// Leave counts an exchange out; the last one out of a Shared whose last
// config let go closes it, before Leave returns.
func (s *Shared) Leave() { s.drain.leave() }

// shutDown closes s now when nothing is in flight through it, else when
// the last exchange ends (drain).
func (s *Shared) shutDown() error {
	draining.Store(s.key, s)
	now, inflight := s.drain.shut(func() {
		if err := s.close(); err != nil {
			s.log.Error("closing the storage after the last request in flight", zap.Error(err))
		}
	})
	if !now {
		s.log.Info("the storage stays open until the requests in flight end", zap.Int("requests", inflight))
		return nil
	}
	return s.close()
}
