package alerts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Observer is told of the dispatcher's counts (the air_alerts_* metrics).
// Its methods must be quick and safe for concurrent use.
type Observer interface {
	// Raised counts an event of kind put on the queue.
	Raised(kind string)
	// Dropped counts an event dropped because the queue was full.
	Dropped(kind string)
	// Delivered counts a delivery that ended in state.
	Delivered(state string)
}

// Config builds a Dispatcher.
type Config struct {
	// Webhooks are the targets.
	Webhooks []*Webhook
	// Sender posts the events; nil: a Sender with its defaults.
	Sender *Sender
	// QueueSize bounds the events raised and not yet in the outbox.
	// Default 1024.
	QueueSize int
	// Lease is how long an instance holds a delivery it claimed before
	// another may take it. It must exceed the Sender's MaxElapsed.
	// Default 2 min.
	Lease time.Duration
	// Poll is how often the outbox is checked for deliveries raised by
	// other instances or left by a dead one. Default 2 s.
	Poll time.Duration
	// Observer, if set, counts events and deliveries.
	Observer Observer
	// Logger logs failed deliveries (never a URL or a secret); nil: none.
	Logger *zap.Logger
}

// Dispatcher takes raised events onto a bounded queue, stores them in an
// outbox and delivers them.
type Dispatcher struct {
	cfg   Config
	owner string
	queue chan Event
	kick  chan struct{}
	hooks map[string]*Webhook
	wg    sync.WaitGroup
	// unstored are events the outbox refused (its storage is down),
	// stored again every Poll; at most QueueSize of them.
	unstored []Event
}

// NewDispatcher returns a Dispatcher over cfg; Run starts its work.
// Events raised before Run wait in the queue.
func NewDispatcher(cfg Config) *Dispatcher {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1024
	}
	cfg.Lease = orDefault(cfg.Lease, 2*time.Minute)
	cfg.Poll = orDefault(cfg.Poll, 2*time.Second)
	if cfg.Sender == nil {
		cfg.Sender = &Sender{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	d := &Dispatcher{cfg: cfg, owner: "inst_" + hex.EncodeToString(b), queue: make(chan Event, cfg.QueueSize),
		kick: make(chan struct{}, 1), hooks: map[string]*Webhook{}}
	for _, w := range cfg.Webhooks {
		d.hooks[w.Name] = w
	}
	return d
}

// Raise queues e without blocking; a full queue drops it, counted. An
// event without an At gets the current time.
func (d *Dispatcher) Raise(e Event) {
	if d == nil {
		return
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	select {
	case d.queue <- e:
		if d.cfg.Observer != nil {
			d.cfg.Observer.Raised(e.Kind)
		}
	default:
		if d.cfg.Observer != nil {
			d.cfg.Observer.Dropped(e.Kind)
		}
	}
}

// Run stores the raised events in ob and delivers them until ctx ends,
// then returns once its deliveries in flight have ended.
func (d *Dispatcher) Run(ctx context.Context, ob Outbox) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.store(ctx, ob)
	}()
	d.deliver(ctx, ob)
	d.wg.Wait()
}

// store moves queued events into the outbox; those it refuses are kept
// and stored again every Poll, so that an event raised while the storage
// is down (the ledger unavailable) is delivered once it is back.
func (d *Dispatcher) store(ctx context.Context, ob Outbox) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-d.queue:
			d.add(ctx, ob, e)
		case <-t.C:
			retry := d.unstored
			d.unstored = nil
			for _, e := range retry {
				d.add(ctx, ob, e)
			}
		}
	}
}

// add stores e in ob with its targets.
func (d *Dispatcher) add(ctx context.Context, ob Outbox, e Event) {
	var targets []string
	for _, w := range d.cfg.Webhooks {
		if w.Wants(e.Kind) {
			targets = append(targets, w.Name)
		}
	}
	added, err := ob.Add(ctx, e, targets)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if len(d.unstored) < d.cfg.QueueSize {
			d.unstored = append(d.unstored, e)
		} else if d.cfg.Observer != nil {
			d.cfg.Observer.Dropped(e.Kind)
		}
		d.cfg.Logger.Warn("storing an alert; retrying", zap.String("event", e.ID), zap.String("kind", e.Kind), zap.Error(err))
		return
	}
	if added && len(targets) > 0 {
		select {
		case d.kick <- struct{}{}:
		default:
		}
	}
}

// deliver claims and makes deliveries when kicked and every Poll.
func (d *Dispatcher) deliver(ctx context.Context, ob Outbox) {
	t := time.NewTicker(d.cfg.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-d.kick:
		}
		for ctx.Err() == nil {
			claimed, err := ob.Claim(ctx, d.owner, d.cfg.Lease, 16)
			if err != nil {
				d.cfg.Logger.Warn("claiming alert deliveries", zap.Error(err))
				break
			}
			if len(claimed) == 0 {
				break
			}
			var wg sync.WaitGroup
			for _, dl := range claimed {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.send(ctx, ob, dl)
				}()
			}
			wg.Wait()
		}
	}
}

// send makes one claimed delivery and records its end.
func (d *Dispatcher) send(ctx context.Context, ob Outbox, dl Delivery) {
	state, attempts, msg := StateFailed, 0, "webhook no longer configured"
	if w, ok := d.hooks[dl.Target]; ok {
		var err error
		attempts, err = d.cfg.Sender.Send(ctx, w, &dl.Event)
		state, msg = StateDelivered, ""
		if err != nil {
			if ctx.Err() != nil {
				return // stopping: the lease runs out and another instance delivers it
			}
			state, msg = StateFailed, err.Error()
			d.cfg.Logger.Warn("alert delivery failed", zap.String("webhook", w.Name), zap.String("event", dl.Event.ID), zap.Int("attempts", attempts), zap.String("error", msg))
		}
	}
	if err := ob.Finish(context.WithoutCancel(ctx), d.owner, dl.Event.ID, dl.Target, state, attempts, msg); err != nil {
		d.cfg.Logger.Warn("recording an alert delivery", zap.Error(err))
	}
	if d.cfg.Observer != nil {
		d.cfg.Observer.Delivered(state)
	}
}
