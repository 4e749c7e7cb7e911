package billing

import (
	"context"
	"time"
)

// commitGroup is the records that wait, together, for the one batch that
// commits them: the writer closes done once that batch is durable (or
// its commit failed), which wakes every waiter of the batch at once, in
// place of one channel send per record. The records a request settles
// while the writer has not taken the queue yet join the same group
// (Ledger.enqueueDurable); the writer takes the group with the queue.
type commitGroup struct {
	done chan struct{}
	// err is why the batch is not durable, nil if it is. It is written
	// before done is closed, and read only after.
	err error
	// durable is how many of the group's first jobs, in queue order, are
	// durable although err is set: a queue too long for one batch is
	// written in several, and a failed one does not take back the
	// records of those before it. Written and read as err is.
	durable int
}

// newCommitGroup returns a group whose batch is not committed yet.
func newCommitGroup() *commitGroup {
	return &commitGroup{done: make(chan struct{})}
}

// finish reports the group's batch durable (err nil) or failed, to every
// waiter, but for its first durable jobs, which are durable even though
// err failed the rest. It is called once.
func (g *commitGroup) finish(err error, durable int) {
	g.err, g.durable = err, durable
	close(g.done)
}

// finished returns a group whose batch ended with err.
func finished(err error) *commitGroup {
	g := newCommitGroup()
	g.finish(err, 0)
	return g
}

// wait waits until the group's batch is durable or failed, ctx ends, or
// d passes, whichever comes first, and reports nil only if the job at
// position pos of the group's queue is durable.
func (g *commitGroup) wait(ctx context.Context, d time.Duration, pos int) error {
	select {
	case <-g.done:
		return g.result(pos)
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.done:
		return g.result(pos)
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return errNotDurable
	}
}

// result is what the finished group reports to the job at position pos.
func (g *commitGroup) result(pos int) error {
	if pos < g.durable {
		return nil
	}
	return g.err
}
