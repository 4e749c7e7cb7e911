// Package health keeps the recent results of each provider's upstream
// attempts (Tracker) and judges the gateway's health checks from them and
// from the storage and ledger state (Evaluate). It does not import Caddy.
// The Tracker is fed by every upstream attempt of chat, messages and task
// requests; routing can read the same windows to pick or skip a provider.
package health

import (
	"sort"
	"sync"
	"time"
)

// DefaultWindow is how far back a Tracker looks by default.
const DefaultWindow = time.Minute

// slots is how many time slots a window is cut into: results leave the
// window one slot at a time, so it spans between window·(1-1/slots) and
// window of history.
const slots = 12

// Stats are the attempts of one provider within the window.
type Stats struct {
	// Attempts counts the attempts whose result is known.
	Attempts int64 `json:"attempts"`
	// Failures counts those that failed: no answer, a timeout, a cut
	// response, or an answer of 429 or 5xx.
	Failures int64 `json:"failures"`
	// FailingClients counts the distinct clients (users) whose attempts
	// failed, up to MaxClients: one client's own bad requests are not
	// evidence that the provider fails everyone.
	FailingClients int64 `json:"failing_clients"`
}

// MaxClients is the most distinct failing clients a window tells apart;
// Stats.FailingClients is at most this.
const MaxClients = 8

// SuccessRate is the share of attempts that succeeded, 1 when there were
// none.
func (s Stats) SuccessRate() float64 {
	if s.Attempts == 0 {
		return 1
	}
	return float64(s.Attempts-s.Failures) / float64(s.Attempts)
}

// Tracker counts the successes and failures of each provider's upstream
// attempts over a rolling time window. Its methods are safe for
// concurrent use; Record takes a read lock and one provider's lock.
type Tracker struct {
	slot time.Duration
	now  func() time.Time

	mu        sync.RWMutex
	providers map[string]*window
}

// NewTracker returns a tracker over a window of span (DefaultWindow when
// zero or less), with the named providers known from the start.
func NewTracker(span time.Duration, providers ...string) *Tracker {
	if span <= 0 {
		span = DefaultWindow
	}
	t := &Tracker{slot: max(span/slots, time.Millisecond), now: time.Now, providers: make(map[string]*window, len(providers))}
	for _, p := range providers {
		t.providers[p] = new(window)
	}
	return t
}

// SetClock makes the tracker read the time from now (a test's fake clock).
// Call it before the tracker is used.
func (t *Tracker) SetClock(now func() time.Time) { t.now = now }

// Reset forgets name's results (a breaker that closed starts afresh).
func (t *Tracker) Reset(name string) {
	t.mu.RLock()
	w := t.providers[name]
	t.mu.RUnlock()
	if w != nil {
		w.mu.Lock()
		w.slots = [slots]slot{}
		w.mu.Unlock()
	}
}

// Window is the span of history the tracker keeps.
func (t *Tracker) Window() time.Duration { return t.slot * slots }

// Record counts one attempt of provider: ok, or failed, for an unnamed
// client. A nil tracker records nothing.
func (t *Tracker) Record(provider string, ok bool) { t.RecordFrom(provider, "", ok) }

// RecordFrom counts one attempt of provider for client (the user whose
// request it was): ok, or failed. A nil tracker records nothing.
func (t *Tracker) RecordFrom(provider, client string, ok bool) {
	if t == nil {
		return
	}
	t.mu.RLock()
	w := t.providers[provider]
	t.mu.RUnlock()
	if w == nil {
		t.mu.Lock()
		if w = t.providers[provider]; w == nil {
			w = new(window)
			t.providers[provider] = w
		}
		t.mu.Unlock()
	}
	w.add(t.epoch(), clientHash(client), ok)
}

// clientHash is client's FNV-1a hash: a window keeps hashes, not names.
func clientHash(client string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(client); i++ {
		h ^= uint64(client[i])
		h *= 1099511628211
	}
	return h
}

// Stats returns provider's attempts within the window.
func (t *Tracker) Stats(provider string) Stats {
	t.mu.RLock()
	w := t.providers[provider]
	t.mu.RUnlock()
	if w == nil {
		return Stats{}
	}
	return w.sum(t.epoch())
}

// Provider is one provider's stats, named.
type Provider struct {
	// Name is the provider's name.
	Name string
	Stats
}

// All returns the stats of every known provider, by name.
func (t *Tracker) All() []Provider {
	if t == nil {
		return nil
	}
	now := t.epoch()
	t.mu.RLock()
	out := make([]Provider, 0, len(t.providers))
	for name, w := range t.providers {
		out = append(out, Provider{Name: name, Stats: w.sum(now)})
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// epoch is the number of the current slot.
func (t *Tracker) epoch() int64 { return t.now().UnixNano() / int64(t.slot) }

// window is a ring of per-slot counts.
type window struct {
	mu    sync.Mutex
	slots [slots]slot
}

// slot holds the counts of one slot of time, epoch.
type slot struct {
	epoch    int64
	ok, fail int64
	// failing are the hashes of the first MaxClients distinct clients
	// whose attempts failed in the slot; nFailing how many.
	failing  [MaxClients]uint64
	nFailing int
}

// addFailing notes client h among the slot's failing clients.
func (s *slot) addFailing(h uint64) {
	for _, c := range s.failing[:s.nFailing] {
		if c == h {
			return
		}
	}
	if s.nFailing < MaxClients {
		s.failing[s.nFailing] = h
		s.nFailing++
	}
}

// add counts a result of client h in the slot of epoch, clearing what the
// slot held from an older turn of the ring.
func (w *window) add(epoch int64, h uint64, ok bool) {
	w.mu.Lock()
	s := &w.slots[epoch%slots]
	if s.epoch != epoch {
		*s = slot{epoch: epoch}
	}
	if ok {
		s.ok++
	} else {
		s.fail++
		s.addFailing(h)
	}
	w.mu.Unlock()
}

// sum adds the slots of the window that ends with epoch.
func (w *window) sum(epoch int64) Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	var st Stats
	var clients slot // the window's distinct failing clients
	for i := range w.slots {
		s := &w.slots[i]
		if s.epoch > epoch-slots && s.epoch <= epoch {
			st.Attempts += s.ok + s.fail
			st.Failures += s.fail
			for _, h := range s.failing[:s.nFailing] {
				clients.addFailing(h)
			}
		}
	}
	st.FailingClients = int64(clients.nFailing)
	return st
}
