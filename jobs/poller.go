// Package jobs runs durable polled jobs: work a request started upstream
// that finishes later (a video task, a background response, a batch of
// the files and batches endpoints), kept in a store so that any instance
// resumes it after a restart.
//
// A job kind brings three things: a store that claims due jobs for a
// lease (Config.Claim, such as store.Tasks.ClaimDue), a step that works
// once on one claimed job (Config.Step: poll the upstream, then record
// the outcome and the job's next due time, or bill and end it) and, if
// it likes, chores that run on their own interval (Config.Chores:
// deleting expired files, ending the holds of jobs that ended
// elsewhere). The Poller runs the sweeps and chores; Backoff spaces the
// polls of a failing job and caps a provider's Retry-After.
//
// A claim moves the job's due time to the end of its lease in the same
// atomic step that selects it, so no two pollers, of one instance or of
// several, work on a job at once; a poller that dies leaves its jobs to
// whoever claims them once their lease ends. The step must therefore
// finish well within the lease (bound its upstream calls by a timeout
// shorter than the lease) and set the job's next due time itself; a job
// whose step did not is polled again when its lease ends. When ctx is
// done the step should hand its job back (due at once) so that the next
// poller need not wait for the lease.
package jobs

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// DefaultMaxSweep bounds the jobs one sweep works on when
// Config.MaxSweep is zero; the rest wait for the next sweep.
const DefaultMaxSweep = 10000

// defaultConcurrency is Config.Concurrency when zero.
const defaultConcurrency = 8

// Claim claims up to max jobs whose due time is at or before now, moving
// their due time to now+lease, and returns them. A job is returned by at
// most one Claim until its lease ends.
type Claim[J any] func(ctx context.Context, now time.Time, lease time.Duration, max int) ([]J, error)

// Step works once on a claimed job. It records what it learned and when
// the job is due next (or ends it); its errors are its own to log.
type Step[J any] func(ctx context.Context, job J)

// Chore is background work of a job kind that runs on its own interval,
// beside the sweeps.
type Chore struct {
	// Every is the interval between two runs. Required.
	Every time.Duration
	// AtStart runs the chore once when the Poller starts, too.
	AtStart bool
	// Run does the work; it returns when ctx is done at the latest.
	Run func(ctx context.Context)
}

// Config configures a Poller of jobs of type J.
type Config[J any] struct {
	// Name names the jobs in the logs, such as "tasks". Required.
	Name string
	// Claim claims due jobs for a lease. Required.
	Claim Claim[J]
	// Step works once on a claimed job. Required.
	Step Step[J]
	// Lease is how long a poller owns a job it claimed. It must exceed
	// the longest step. Required.
	Lease time.Duration
	// Tick is the interval between two sweeps for due jobs. Required.
	Tick time.Duration
	// Concurrency bounds the steps in flight: a sweep claims this many
	// jobs at a time and works on them together. Default: 8.
	Concurrency int
	// MaxSweep bounds the jobs one sweep works on, so that a backlog
	// does not starve the chores. Default: DefaultMaxSweep.
	MaxSweep int
	// Chores run beside the sweeps.
	Chores []Chore
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives the poller's logs; nil discards them.
	Logger *zap.Logger
}

// Poller sweeps the due jobs of one kind, claiming them for a lease and
// working on each with the kind's Step, and runs the kind's chores.
type Poller[J any] struct {
	c Config[J]
}

// New returns a Poller of c, its defaults filled in.
func New[J any](c Config[J]) (*Poller[J], error) {
	switch {
	case c.Name == "" || c.Claim == nil || c.Step == nil:
		return nil, errors.New("jobs: name, claim and step are required")
	case c.Lease <= 0 || c.Tick <= 0:
		return nil, errors.New("jobs: " + c.Name + ": lease and tick must be positive")
	}
	for _, ch := range c.Chores {
		if ch.Every <= 0 || ch.Run == nil {
			return nil, errors.New("jobs: " + c.Name + ": a chore needs a positive interval and a function")
		}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = defaultConcurrency
	}
	if c.MaxSweep <= 0 {
		c.MaxSweep = DefaultMaxSweep
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return &Poller[J]{c: c}, nil
}

// Run sweeps at once and then every Tick, and runs the chores on their
// intervals (those AtStart first), until ctx is done. The chores and the
// sweeps take turns: none runs while another does, and a sweep follows
// every chore.
func (p *Poller[J]) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	tick := time.NewTicker(p.c.Tick)
	defer tick.Stop()
	due := make(chan int)
	for i, ch := range p.c.Chores {
		if ch.AtStart {
			ch.Run(ctx)
		}
		wg.Go(func() { signal(ctx, ch.Every, i, due) })
	}
	for {
		p.Sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case i := <-due:
			p.c.Chores[i].Run(ctx)
		case <-tick.C:
		}
	}
}

// signal sends i on due every interval, until ctx is done; a tick that
// comes while the last is not taken yet is dropped, as a Ticker's is.
func signal(ctx context.Context, every time.Duration, i int, due chan<- int) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			select {
			case due <- i:
			case <-ctx.Done():
				return
			}
		}
	}
}

// Sweep works once on every job that is due: it claims them,
// Concurrency at a time, for one lease each, and runs their steps
// together, until none is due, ctx is done or MaxSweep jobs were worked
// on.
func (p *Poller[J]) Sweep(ctx context.Context) {
	for swept := 0; swept < p.c.MaxSweep && ctx.Err() == nil; {
		claimed, err := p.c.Claim(ctx, p.c.Now(), p.c.Lease, p.c.Concurrency)
		if err != nil {
			if ctx.Err() == nil {
				p.c.Logger.Error("claiming due "+p.c.Name, zap.Error(err))
			}
			return
		}
		if len(claimed) == 0 {
			return
		}
		swept += len(claimed)
		var wg sync.WaitGroup
		for _, j := range claimed {
			wg.Go(func() { p.c.Step(ctx, j) })
		}
		wg.Wait()
	}
}
