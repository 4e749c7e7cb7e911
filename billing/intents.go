package billing

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// intentsDir is the folder of the ledger's journal folder that holds the
// intents of requests in flight.
const intentsDir = "intents"

// intentSegmentSize is the size of an intent log segment: small, so that
// segments whose intents are all resolved are deleted soon.
const intentSegmentSize = 1 << 20

// OutcomeInterrupted is the outcome of a request that had reached an
// upstream when the gateway stopped (a crash, kill -9) before it could
// settle it: the restart records it from its intent, with usage estimated
// from the request and no cost (see SettleInterrupted).
const OutcomeInterrupted = "interrupted"

// intentLog keeps, for every request that is about to reach an upstream,
// an intent: the record it would leave if the gateway died before settling
// it. Intents are appended to their own journal with a plain write (no
// sync: they survive a crash of the process, which is what they are for)
// and forgotten once the request's record is durable. Segments whose
// intents are all resolved are deleted.
type intentLog struct {
	log *zap.Logger

	mu      sync.Mutex
	j       *journal.Journal
	open    map[string]uint64 // request id → segment of its intent
	perSeg  map[uint64]int    // segment → intents not resolved
	left    []Record          // intents found at open, for SettleInterrupted
	settled bool              // SettleInterrupted ran
}

// openIntents opens the intent log in dir and reads the intents that a
// stopped gateway left.
func openIntents(dir string, log *zap.Logger) (*intentLog, error) {
	// Preallocated: an append into zeros costs a few microseconds, where
	// one that grows the file waits tens of them for the file system.
	j, err := journal.Open(journal.Options{Dir: dir, SegmentSize: intentSegmentSize, Preallocate: intentSegmentSize / 4})
	if err != nil {
		return nil, err
	}
	logRepair(log, "ledger intents", j.Repair())
	il := &intentLog{log: log, j: j, open: map[string]uint64{}, perSeg: map[uint64]int{}}
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
	il.left = slices.DeleteFunc(il.left, func(rec Record) bool {
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
func (il *intentLog) track(id string, seq uint64) {
	if _, dup := il.open[id]; dup {
		return
	}
	il.open[id] = seq
	il.perSeg[seq]++
}

// add appends the intent rec.
func (il *intentLog) add(rec *Record) error {
	b, err := encodeEntry(rec, false, time.Now())
	if err != nil {
		return err
	}
	il.mu.Lock()
	defer il.mu.Unlock()
	if il.j == nil {
		return errors.New("ledger closed")
	}
	pos, _, err := il.j.Append([][]byte{b})
	if err != nil {
		return err
	}
	il.track(rec.ID, pos[0].Segment)
	return nil
}

// resolve forgets the intents of recs, whose records are durable.
func (il *intentLog) resolve(recs []*Record) {
	il.mu.Lock()
	defer il.mu.Unlock()
	freed := false
	for _, rec := range recs {
		freed = il.forget(rec.ID) || freed
	}
	if freed {
		il.trim()
	}
}

// abandonedMark is the outcome of the entry that cancels an intent whose
// request never reached an upstream.
const abandonedMark = "abandoned"

// drop forgets the intent of a request that never reached an upstream,
// and appends a mark so that a restart does not record it: this happens
// only when no upstream could be reached, so its cost does not matter.
func (il *intentLog) drop(id string) {
	mark, err := encodeEntry(&Record{ID: id, Outcome: abandonedMark}, false, time.Now())
	il.mu.Lock()
	defer il.mu.Unlock()
	if _, ok := il.open[id]; !ok || il.j == nil {
		return
	}
	if err == nil {
		_, _, err = il.j.Append([][]byte{mark})
	}
	if err != nil {
		il.log.Error("marking a ledger intent abandoned; a restart records it as interrupted", zap.String("id", id), zap.Error(err))
	}
	if il.forget(id) {
		il.trim()
	}
}

// forget removes id's intent and reports whether its segment has no open
// intent left.
func (il *intentLog) forget(id string) bool {
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
func (il *intentLog) trim() {
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
func (il *intentLog) emptyPast(size int64) {
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
func (il *intentLog) close() error {
	il.mu.Lock()
	defer il.mu.Unlock()
	if il.j == nil {
		return nil
	}
	err := il.j.Close()
	il.j = nil
	return err
}

// Intend records, before a request reaches an upstream, the record it
// leaves if the gateway dies before settling it: rec, with outcome
// interrupted. Settling a record with the same ID, or Abandon, resolves
// the intent.
func (l *Ledger) Intend(rec Record) error {
	rec.fillDefaults(time.Now())
	return l.intents.add(&rec)
}

// Abandon resolves the intent of a request that never reached an upstream
// and leaves no record.
func (l *Ledger) Abandon(id string) { l.intents.drop(id) }

// SettleInterrupted records the intents that a stopped gateway left and
// that have no record: requests that had reached an upstream when it
// stopped. Each is written with outcome interrupted and usage source
// estimated, priced by price; an intent whose request was settled before
// the stop (its record is in the journal) is not recorded again. It runs
// once per ledger and reports how many records it wrote.
func (l *Ledger) SettleInterrupted(ctx context.Context, price func(Record) Record) (int, error) {
	il := l.intents
	il.mu.Lock()
	left := il.left
	done := il.settled
	il.left, il.settled = nil, true
	il.mu.Unlock()
	if done || len(left) == 0 {
		return 0, nil
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
	err := l.j.Scan(journal.Pos{}, journal.Pos{}, oldest.Add(-time.Minute), func(pos journal.Pos, b []byte) error {
		if e, err := decodeEntry(b); err == nil && want[e.rec.ID] {
			delete(want, e.rec.ID)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("reading the ledger for interrupted requests: %w", err)
	}
	var recs []*Record
	for i := range left {
		rec := &left[i]
		if !want[rec.ID] {
			continue
		}
		delete(want, rec.ID) // an intent appended twice is recorded once
		rec.Outcome, rec.Source = OutcomeInterrupted, SourceEstimated
		*rec = price(*rec)
		recs = append(recs, rec)
	}
	if len(recs) > 0 {
		if _, err := l.commit(ctx, recs, false); err != nil {
			return 0, err
		}
		l.log.Warn("recorded requests interrupted by the last stop", zap.Int("records", len(recs)))
	}
	all := make([]*Record, len(left))
	for i := range left {
		all[i] = &left[i]
	}
	il.resolve(all)
	il.mu.Lock()
	il.emptyPast(0) // every intent left by the stop is settled
	il.mu.Unlock()
	return len(recs), nil
}
