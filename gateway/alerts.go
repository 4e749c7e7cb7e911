package gateway

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/alerts"
	"github.com/caddy-air/caddy-air/routing"
)

// keyExpiryEvery is how many alert checks pass between two reads of every
// key for their expiry (a read of the whole key table).
const keyExpiryEvery = 10

// breakerStates is the last breaker state that alerts saw of each
// upstream, by its labels, across config reloads: a new config's router
// reports every breaker's state at once, which raises nothing unless it
// changed.
var breakerStates sync.Map // string → routing.State

// breakerAlerts raises breaker_open when an upstream's breaker opens from
// closed, and breaker_closed when it closes again.
type breakerAlerts struct{ d *alerts.Dispatcher }

// BreakerAlerts returns the routing.Observer that raises breaker_open on
// d when an upstream's breaker opens from closed, and breaker_closed when
// it closes again.
func BreakerAlerts(d *alerts.Dispatcher) routing.Observer { return breakerAlerts{d} }

// BreakerState implements routing.Observer.
func (b breakerAlerts) BreakerState(u *routing.Upstream, s routing.State) {
	id := u.Provider + "\x00" + u.Deployment() + "\x00" + u.PublicBaseURL() + "\x00" + strconv.Itoa(u.Key)
	prev, seen := breakerStates.Swap(id, s)
	var kind, msg string
	switch {
	case s == routing.Open && (!seen || prev.(routing.State) == routing.Closed):
		kind, msg = alerts.KindBreakerOpen, "the breaker of provider "+u.Provider+" opened: its upstream is out of rotation"
	case s == routing.Closed && seen && prev.(routing.State) != routing.Closed:
		kind, msg = alerts.KindBreakerClosed, "the breaker of provider "+u.Provider+" closed: its upstream is back in rotation"
	default:
		return
	}
	now := time.Now().UTC()
	b.d.Raise(alerts.Event{ID: alerts.DedupeID(kind, id, hostname, now.Format(time.RFC3339Nano)), Kind: kind, At: now, Message: msg,
		Data: map[string]string{"provider": u.Provider, "deployment": u.Deployment(), "base_url": u.PublicBaseURL(),
			"key": strconv.Itoa(u.Key), "instance": hostname}})
}

// KeyRejected implements routing.Observer.
func (breakerAlerts) KeyRejected(string, int) {}

// Cooldown implements routing.Observer.
func (breakerAlerts) Cooldown(*routing.Upstream) {}

// Fallback implements routing.Observer.
func (breakerAlerts) Fallback(string, string) {}

// Observers tells each of its observers.
type Observers []routing.Observer

// BreakerState implements routing.Observer.
func (obs Observers) BreakerState(u *routing.Upstream, s routing.State) {
	for _, o := range obs {
		o.BreakerState(u, s)
	}
}

// KeyRejected implements routing.Observer.
func (obs Observers) KeyRejected(p string, k int) {
	for _, o := range obs {
		o.KeyRejected(p, k)
	}
}

// Cooldown implements routing.Observer.
func (obs Observers) Cooldown(u *routing.Upstream) {
	for _, o := range obs {
		o.Cooldown(u)
	}
}

// Fallback implements routing.Observer.
func (obs Observers) Fallback(m, f string) {
	for _, o := range obs {
		o.Fallback(m, f)
	}
}

// hostname names this instance in the events only it sees.
var hostname = func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}()

// alertWatch is what the periodic checks remember between runs.
type alertWatch struct {
	budgets    alerts.BudgetWatcher
	ledgerDown bool
	ticks      int
}

// runAlerts delivers the alerts and runs the periodic checks (budgets,
// the ledger, key expiries) until ctx ends.
func (s *Services) runAlerts(ctx context.Context, st *Shared) {
	delivering := make(chan struct{})
	go func() {
		defer close(delivering)
		s.Alerts.Run(ctx, st.Repos.Alerts)
	}()
	defer func() { <-delivering }()
	var w alertWatch
	t := time.NewTicker(s.AlertInterval)
	defer t.Stop()
	for {
		s.checkAlerts(ctx, st, &w)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// checkAlerts runs the periodic checks once.
func (s *Services) checkAlerts(ctx context.Context, st *Shared, w *alertWatch) {
	now := time.Now().UTC()
	down := st.Ledger.Stats().Broken != "" || s.Probe.Check(ctx, st.Repos.Probe) != nil
	if e := w.ledger(down, now); e != nil {
		s.Alerts.Raise(*e)
	}
	if !down {
		uses, err := alerts.BudgetUses(ctx, st.Repos.Budgets, now, s.Prices.Currency())
		if err != nil && ctx.Err() == nil {
			s.Logger.Warn("alerts: reading budgets", zap.Error(err))
		}
		for _, e := range w.budgets.Check(uses, now) {
			s.Alerts.Raise(e)
		}
	}
	if w.ticks%keyExpiryEvery == 0 && !down {
		s.checkKeyExpiry(ctx, st, now)
	}
	w.ticks++
}

// ledger returns the alert of the ledger's availability becoming down,
// nil when it did not change since the last check (at the start, the
// ledger counts as available).
func (w *alertWatch) ledger(down bool, now time.Time) *alerts.Event {
	if down == w.ledgerDown {
		return nil
	}
	w.ledgerDown = down
	kind, msg := alerts.KindLedgerUp, "the ledger is available again"
	if down {
		kind, msg = alerts.KindLedgerDown, "the ledger is unavailable: billable requests are refused (see /air/health)"
	}
	return &alerts.Event{ID: alerts.DedupeID(kind, hostname, now.Format(time.RFC3339Nano)), Kind: kind, At: now, Message: msg,
		Data: map[string]string{"instance": hostname}}
}

// checkKeyExpiry raises key_expiring for every active key that expires
// within the lead; its id (key and expiry) makes it one event however
// often and by how many instances it is seen.
func (s *Services) checkKeyExpiry(ctx context.Context, st *Shared, now time.Time) {
	ks, err := st.Keys.List(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			s.Logger.Warn("alerts: listing keys", zap.Error(err))
		}
		return
	}
	lead := s.KeyExpiryLead
	for _, k := range ks {
		if !k.Active(now) || k.ExpiresAt == nil || k.ExpiresAt.Sub(now) > lead {
			continue
		}
		exp := k.ExpiresAt.UTC().Format(time.RFC3339)
		s.Alerts.Raise(alerts.Event{ID: alerts.DedupeID(alerts.KindKeyExpiring, k.ID, exp), Kind: alerts.KindKeyExpiring, At: now,
			Message: "key " + k.ID + " of user " + k.User + " expires at " + exp,
			Data:    map[string]string{"key_id": k.ID, "user": k.User, "expires_at": exp}})
	}
}
