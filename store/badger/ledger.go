package badger

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// DefaultRetention is how long ledger records are kept when OpenLedger is
// given no retention.
const DefaultRetention = 90 * 24 * time.Hour

// Ledger is store.Ledger on an append-only journal (package
// store/badger/journal says why) and a DB. Records go to the journal; the
// DB keeps what must be looked up: each record's contribution to its day ×
// user × key × model × currency aggregate and to the spend counters of its
// user and key, the ID index of Insert, and the journal position up to
// which it counts records.
//
// Append writes its records to the journal in one write and syncs it once
// (fdatasync) before it returns: that is the durability of a batch. Write
// (ledger_durability journaled) writes them without the sync, and Sync,
// run by the billing writer's syncer in the background, syncs whatever
// was written before it; only synced records are counted (see Write). The
// journal is the source of truth: the DB counts records after them, in one
// transaction for all records appended within countLinger, and a record
// the DB has not counted when the process stops (a crash, kill -9, a
// failed transaction) is counted when the ledger is opened again. So the
// aggregates and spend can never disagree with the records, and a durable
// record is never undone. Insert commits at once and indexes the ID in the
// same transaction; its entry is cut off the journal again if that
// transaction fails, so that a retry is not counted twice.
type Ledger struct {
	db        KV
	j         *journal.Journal
	retention time.Duration
	log       *zap.Logger
	intents   *Intents

	// commitMu serializes commits: appending to the journal and counting
	// in the DB must happen in the same order.
	commitMu   sync.Mutex
	enc        []byte    // appendLocked's buffer of encoded entries, reused under commitMu
	broken     error     // why commits are refused: the journal could not be synced or cut back
	closed     bool      // the journal is closed
	lastExpiry time.Time // when old segments were last deleted
	uncounted  []*store.Record
	// uncountedAt holds the journal position of each uncounted record.
	uncountedAt []journal.Pos
	rescan      bool        // uncounted was dropped: count from the journal instead
	countTimer  *time.Timer // armed while records wait to be counted

	// unsynced are the records that Write put in the journal and no sync
	// has covered yet, at unsyncedAt; synced is where the journal is
	// known to be on disk. Only synced records are counted (see Write).
	unsynced   []*store.Record
	unsyncedAt []journal.Pos
	synced     journal.Pos
	// writes counts the records Write put in the journal, promoted
	// those of them handed to the count: unsynced holds the rest.
	writes, promoted uint64
	// syncMu serializes Syncs (not Writes: a Sync holds commitMu only
	// before and after the disk's work).
	syncMu sync.Mutex

	countedMu sync.RWMutex
	counted   journal.Pos // where the records the DB counts end; readers see no further
}

// Sizes and times of the ledger.
const (
	// maxBatch bounds the records counted in one DB transaction when
	// counting from the journal. A record writes at most 8 keys (its
	// aggregate and index entry, its user's month, 4 spend counters, its
	// id), and a transaction of the lean DB takes about 1,600: 128 records
	// always fit.
	maxBatch = 128
	// countLinger is how long appended records may wait to be counted in
	// the DB: one transaction counts all records appended within it.
	// Records are durable before; reports see them after (the admin API's
	// reports flush first). A count costs about 300 µs of CPU whatever it
	// carries: at 10–50 requests a second, a shorter linger counts each
	// record alone, and the count is a tenth of the request's cost to the
	// gateway.
	countLinger = 500 * time.Millisecond
	// maxUncounted bounds the records kept in memory while the DB cannot
	// count them; beyond it they are counted from the journal.
	maxUncounted = 1 << 16
	// retryInterval is how soon a failed count is tried again.
	retryInterval = time.Second
)

// journalPreallocate is the step by which the journal's last segment is
// extended with zeros ahead of its records, so that a batch's sync flushes
// data alone (see journal.Options.Preallocate).
const journalPreallocate = 4 << 20

// intentsDir is the folder of the ledger's folder that holds the intents
// of requests in flight.
const intentsDir = "intents"

// OpenLedger opens the ledger whose journal is in dir (created if missing)
// and whose aggregates, spend and index are in db, with the intent log in
// dir's intents folder. It keeps records for retention (zero or negative:
// DefaultRetention) and counts in db the records that db did not count
// yet. log may be nil. Close it before db.
func OpenLedger(db KV, dir string, retention time.Duration, log *zap.Logger) (*Ledger, error) {
	if retention <= 0 {
		retention = DefaultRetention
	}
	if log == nil {
		log = zap.NewNop()
	}
	j, err := journal.Open(journal.Options{Dir: dir, Preallocate: journalPreallocate,
		OnDamage: logDamage(log, "ledger journal", dir, recordsDamageCost)})
	if err != nil {
		return nil, err
	}
	logRepair(log, "ledger journal", j.Repair())
	// Records a killed process wrote without a sync (Write) are in the
	// page cache: made durable before they are counted.
	if err := j.Sync(); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: syncing the journal: %w", err)
	}
	l := &Ledger{db: db, j: j, retention: retention, log: log, synced: j.End()}
	if err := buildUserIndex(context.Background(), db, log); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := l.buildRecordIndex(context.Background()); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if err := l.recover(context.Background(), l.synced); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if l.intents, err = openIntents(l, filepath.Join(dir, intentsDir), log); err != nil {
		_ = j.Close()
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.expire(time.Now())
	return l, nil
}

// Intents returns the ledger's intent log.
func (l *Ledger) Intents() *Intents { return l.intents }

// Err implements store.Ledger.
func (l *Ledger) Err() error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	return l.broken
}

// Close counts the uncounted records and closes the journal and the
// intent log. It does not close the DB.
func (l *Ledger) Close() error {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	if l.closed {
		return nil
	}
	var err error
	if l.broken == nil {
		if err = l.countLocked(context.Background()); err != nil {
			l.log.Error("counting ledger records at close; they are counted at the next start", zap.Error(err))
			err = nil
		}
	}
	if l.countTimer != nil {
		l.countTimer.Stop()
		l.countTimer = nil
	}
	l.closed = true
	return errors.Join(err, l.j.Close(), l.intents.close())
}

// Interface guard.
var _ store.Ledger = (*Ledger)(nil)
