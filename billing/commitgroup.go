package billing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// commitGroup is the records that wait, together, for one attempt of the
// writer to write them: the writer closes done once that attempt ended,
// which wakes every waiter of the group at once, in place of one channel
// send per record. The records a request settles while the writer has not
// taken the queue yet join the same group (Ledger.enqueueDurable); the
// writer takes the group with the queue. Each waiter then reads its own
// record's state (ack): written, or back in the queue for another try
// with the group of that try.
type commitGroup struct {
	done chan struct{}
	// err is why the attempt failed for some of its records, nil if it
	// did not. It is written before done is closed, and read only after.
	err error
}

// newCommitGroup returns a group whose attempt has not ended.
func newCommitGroup() *commitGroup {
	return &commitGroup{done: make(chan struct{})}
}

// finish ends the group's attempt, with the error of its failed records.
// It is called once.
func (g *commitGroup) finish(err error) {
	g.err = err
	close(g.done)
}

// States of an ack.
const (
	// ackQueued: the record waits for the writer (first or again).
	ackQueued int32 = iota
	// ackTaken: the writer is writing it.
	ackTaken
	// ackWritten: it is written (see Durability); its answer may end.
	ackWritten
	// ackWithheld: its waiter gave up before the writer took it; the
	// client gets an error, and the writer writes the record with
	// outcome withheld (see OutcomeWithheld).
	ackWithheld
)

// ack is the state of a record whose settler waits until it is written
// (Reservation.SettleDurable), shared by the waiter and the writer. The
// writer moves it from queued to taken when it takes the record into an
// attempt, and then to written, or back to queued, with the group of the
// next attempt, if the attempt failed. The waiter moves it from queued to
// withheld when its wait is over: a record is either written as it was
// settled, and its answer delivered, or written as withheld, and its
// client given an error, never both. A waiter whose record is being
// written when its time is up waits for that attempt.
type ack struct {
	state atomic.Int32
	group atomic.Pointer[commitGroup]
}

// newAck returns the ack of a record queued in g's attempt.
func newAck(g *commitGroup) *ack {
	a := &ack{}
	a.group.Store(g)
	return a
}

// take marks the record taken into an attempt and reports true, or
// reports false if its waiter withheld it.
func (a *ack) take() bool {
	return a.state.CompareAndSwap(ackQueued, ackTaken)
}

// wait waits until the record is written, ctx ends, or d passes: nil if
// it is written, else an error. Failed attempts do not end the wait: the
// writer tries the record again (every retryInterval) and the wait goes
// on until d. If d passes while the record is queued, it is withheld
// (errNotDurable); while an attempt writes it, the wait ends with that
// attempt's outcome.
func (a *ack) wait(ctx context.Context, d time.Duration) error {
	if a.state.Load() == ackWritten {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	expired := t.C
	over := false
	var last error
	for {
		switch a.state.Load() {
		case ackWritten:
			return nil
		case ackWithheld:
			return withheldError(last)
		case ackQueued:
			if over && a.state.CompareAndSwap(ackQueued, ackWithheld) {
				return withheldError(last)
			}
		}
		g := a.group.Load()
		select {
		case <-g.done:
			if g.err != nil {
				last = g.err
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-expired:
			over, expired = true, nil
		}
	}
}

// withheldError is errNotDurable, with the last failure of the storage.
func withheldError(last error) error {
	if last == nil {
		return errNotDurable
	}
	return fmt.Errorf("%w: %w", errNotDurable, last)
}
