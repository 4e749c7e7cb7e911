package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// intentSegmentSize is the size of an intent log segment: small, so that
// segments whose intents are all resolved are deleted soon.
const intentSegmentSize = 1 << 20

// Intents is store.Intents on a journal of its own. It keeps, for every request that is about to reach an upstream,
// an intent: the record it would leave if the gateway died before settling
// it. Intents are appended to their own journal with a plain write (no
// sync: they survive a crash of the process, which is what they are for)
// and forgotten once the request's record is durable. Segments whose
// intents are all resolved are deleted.
type Intents struct {
	log    *zap.Logger
	ledger *Ledger // where Interrupted looks for records

	mu      sync.Mutex
	j       *journal.Journal
	open    map[string]uint64 // request id → segment of its intent
	perSeg  map[uint64]int    // segment → intents not resolved
	left    []store.Record    // intents found at open, for Interrupted
	settled bool              // Interrupted ran
	pending map[string]bool   // intents Interrupted reported and the caller has not resolved
	enc     entryEncoder      // Add's encoder, reused
	one     [1][]byte         // Add's entries, reused
}

// openIntents opens the intent log in dir and reads the intents that a
// stopped gateway left.
func openIntents(l *Ledger, dir string, log *zap.Logger) (*Intents, error) {
	// Preallocated: an append into zeros costs a few microseconds, where
	// one that grows the file waits tens of them for the file system.
	// Mapped: an intent is copied into the page cache without a system
	// call; the preallocation's writes, not the copy, meet a full disk.
	j, err := journal.Open(journal.Options{Dir: dir, SegmentSize: intentSegmentSize, Preallocate: intentSegmentSize / 4, Mapped: true,
		OnDamage: logDamage(log, "ledger intents", dir, intentsDamageCost)})
	if err != nil {
		return nil, err
	}
	logRepair(log, "ledger intents", j.Repair())
	il := &Intents{log: log, ledger: l, j: j, open: map[string]uint64{}, perSeg: map[uint64]int{}}
	abandoned := map[string]bool{}
	err = j.Scan(journal.Pos{}, journal.Pos{}, time.Time{}, func(pos journal.Pos, b []byte) error {
		e, err := decodeEntry(b)
		if err != nil {
			log.Error("skipping an undecodable ledger intent", zap.Stringer("position", pos), zap.Error(err))
			return nil
		}
		if e.rec.Outcome == abandonedMark {
			abandoned[e.rec.ID] = true
			return nil
		}
		il.left = append(il.left, e.rec)
		il.track(e.rec.ID, pos.Segment)
		return nil
	})
	il.left = slices.DeleteFunc(il.left, func(rec store.Record) bool {
		if abandoned[rec.ID] {
			il.forget(rec.ID)
			return true
		}
		return false
	})
	if err != nil {
		// Keep what was read: a lost intent loses the record of one
		// interrupted request, not the ledger.
		log.Error("reading ledger intents", zap.Error(err))
	}
	return il, nil
}

// track counts an intent of segment seq as open.
func (il *Intents) track(id string, seq uint64) {
	if _, dup := il.open[id]; dup {
		return
	}
	il.open[id] = seq
	il.perSeg[seq]++
}

// Add implements store.Intents: an append to the intent journal, not
// synced (an intent must survive a crash of the process, which the page
// cache does).
func (il *Intents) Add(rec store.Record) error {
	now := time.Now()
	il.mu.Lock()
	defer il.mu.Unlock()
	if il.j == nil {
		return errors.New("ledger closed")
	}
	il.one[0] = il.enc.encode(&rec, false, now)
	pos, _, err := il.j.Append(il.one[:])
	il.one[0] = nil
	if err != nil {
		return err
	}
	il.track(rec.ID, pos[0].Segment)
	return nil
}

// Resolve implements store.Intents.
func (il *Intents) Resolve(ids []string) {
	il.mu.Lock()
	defer il.mu.Unlock()
	freed := false
	for _, id := range ids {
		freed = il.forget(id) || freed
		if il.pending != nil {
			delete(il.pending, id)
		}
	}
	if freed {
		il.trim()
	}
	if il.pending != nil && len(il.pending) == 0 {
		il.pending = nil
		il.emptyPast(0) // every intent left by the stop is settled
	}
}

// abandonedMark is the outcome of the entry that cancels an intent whose
// request never reached an upstream.
const abandonedMark = "abandoned"

// Abandon implements store.Intents: it forgets the intent of a request
// that never reached an upstream, and appends a mark so that a restart
// does not report it.
func (il *Intents) Abandon(id string) {
	mark := appendEntry(nil, &store.Record{ID: id, Outcome: abandonedMark}, false, time.Now())
	il.mu.Lock()
	defer il.mu.Unlock()
	if _, ok := il.open[id]; !ok || il.j == nil {
		return
	}
	if _, _, err := il.j.Append([][]byte{mark}); err != nil {
		il.log.Error("marking a ledger intent abandoned; a restart records it as interrupted", zap.String("id", id), zap.Error(err))
	}
	if il.forget(id) {
		il.trim()
	}
}

// forget removes id's intent and reports whether its segment has no open
// intent left.
func (il *Intents) forget(id string) bool {
	seq, ok := il.open[id]
	if !ok {
		return false
	}
	delete(il.open, id)
	if il.perSeg[seq]--; il.perSeg[seq] > 0 {
		return false
	}
	delete(il.perSeg, seq)
	return true
}

// trimAt is the size past which the last segment is emptied when it holds
// no open intent; below it, a restart reads its resolved intents and finds
// their records, which costs little.
const trimAt = 64 << 10

// trim deletes the segments before the first that has open intents, and
// empties the last one once it holds none and has grown past trimAt.
func (il *Intents) trim() {
	if il.j == nil {
		return
	}
	end := il.j.End()
	through := end.Segment
	for seq := range il.perSeg {
		through = min(through, seq-1)
	}
	if _, err := il.j.RemoveThrough(through); err != nil {
		il.log.Error("deleting resolved ledger intents", zap.Error(err))
	}
	il.emptyPast(trimAt)
}

// emptyPast empties the last segment when it holds no open intent and has
// grown past size bytes. il.mu must be held.
func (il *Intents) emptyPast(size int64) {
	if il.j == nil || len(il.perSeg) > 0 {
		return
	}
	if end := il.j.End(); end.Offset > size {
		if err := il.j.Truncate(journal.Pos{Segment: end.Segment}); err != nil {
			il.log.Error("emptying resolved ledger intents", zap.Error(err))
		}
	}
}

// close closes the intent log.
func (il *Intents) close() error {
	il.mu.Lock()
	defer il.mu.Unlock()
	if il.j == nil {
		return nil
	}
	err := il.j.Close()
	il.j = nil
	return err
}

// Interrupted implements store.Intents: the intents left at open whose
// records are not in the ledger's journal.
func (il *Intents) Interrupted(ctx context.Context) ([]store.Record, error) {
	il.mu.Lock()
	left := il.left
	done := il.settled
	il.left, il.settled = nil, true
	il.mu.Unlock()
	if done || len(left) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(left))
	oldest := left[0].Time
	for _, rec := range left {
		want[rec.ID] = true
		if rec.Time.Before(oldest) {
			oldest = rec.Time
		}
	}
	// A record is appended after its intent: segments finished before the
	// oldest intent hold none of them.
	err := il.ledger.j.Scan(journal.Pos{}, journal.Pos{}, oldest.Add(-time.Minute), func(pos journal.Pos, b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e, err := decodeEntry(b); err == nil && want[e.rec.ID] {
			delete(want, e.rec.ID)
		}
		return nil
	})
	if err != nil {
		il.mu.Lock()
		il.left, il.settled = left, false
		il.mu.Unlock()
		return nil, fmt.Errorf("reading the ledger for interrupted requests: %w", err)
	}
	var out, recorded []store.Record
	pending := map[string]bool{}
	for _, rec := range left {
		switch {
		case pending[rec.ID]:
			// An intent appended twice is reported once.
		case want[rec.ID]:
			out = append(out, rec)
			pending[rec.ID] = true
		default:
			recorded = append(recorded, rec)
		}
	}
	il.mu.Lock()
	if len(pending) > 0 {
		il.pending = pending
	}
	il.mu.Unlock()
	ids := make([]string, len(recorded))
	for i, rec := range recorded {
		ids[i] = rec.ID
	}
	il.Resolve(ids)
	return out, nil
}

// Interface guard.
var _ store.Intents = (*Intents)(nil)
