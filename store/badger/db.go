// Package badger is the embedded storage backend: the repositories of
// package store on a Badger v4 database (with lean memory options,
// value-log garbage collection and logging through zap), the ledger's
// append-only journal (package journal) and media files (package
// store/mediafs). One instance owns a backend: Badger locks its
// directory. OpenRepos opens it all.
package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
)

// Options tunes the database. Zero values take lean defaults that keep the
// resident memory of an idle gateway in the tens of megabytes.
type Options struct {
	// Dir is the database directory; it is created if missing.
	Dir string
	// Logger receives Badger's log lines; nil discards them.
	Logger *zap.Logger
	// GCInterval is how often value-log garbage collection runs; zero means
	// five minutes, negative disables it.
	GCInterval time.Duration
	// InMemory keeps everything in memory (for throwaway stores only).
	InMemory bool
}

// DB is the Badger database, as a KV for the repositories of this package.
type DB struct {
	db   *badger.DB
	log  *zap.Logger
	dir  string // "" in memory
	stop chan struct{}
	wg   sync.WaitGroup

	// room refuses writes that the disk may not have room for (nil in
	// memory); see room.go.
	room *room

	compactArmed atomic.Bool // a compaction check is due
	closing      atomic.Bool // Close is under way: writes are refused
	compactMu    sync.Mutex  // held by a compaction, and by Close
	closed       bool        // under compactMu
	// badgerCompacts is set when Badger's own compactors run (a large
	// store): the checks that writes arm only count the tables.
	badgerCompacts bool
}

// Open opens (or creates) the Badger database described by o.
func Open(o Options) (*DB, error) {
	log := o.Logger
	if log == nil {
		log = zap.NewNop()
	}
	// Sized for a gateway, not a database server: Badger's defaults
	// (64 MiB memtables, 256 MiB block cache) would multiply Caddy's
	// memory. Badger builds tables in the Go heap, and the garbage
	// collector lets the heap grow to twice what is live when it runs, so
	// what is live during a memtable flush sets the memory peak under
	// sustained writes: the old and the new memtable, a table builder of at
	// least twice the table size, and a fixed 3 MiB index builder. The
	// store gets no key per request (the ledger's records go to its
	// journal), only aggregates, counters, keys and tasks, so 1 MiB
	// memtables flush rarely and 512 KiB tables keep the builders small.
	// Reads need no cache: tables are memory-mapped. Value log files are
	// memory-mapped at twice their size as sparse files and filled by
	// writes: 16 MiB keeps that claim on the disk small (the storage guard
	// keeps room for it), now that media live in files of their own.
	opts := badger.DefaultOptions(o.Dir).
		WithInMemory(o.InMemory).
		WithLogger(zapLogger{log.Sugar()}).
		WithMemTableSize(1 << 20).
		WithBaseTableSize(512 << 10).
		WithNumMemtables(2).
		WithNumLevelZeroTables(numLevelZeroTables).
		WithNumLevelZeroTablesStall(numLevelZeroTablesStall).
		WithValueThreshold(1 << 10).
		WithValueLogFileSize(16 << 20).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithCompression(options.None).
		WithNumCompactors(0). // compactions on demand: see compact.go
		WithDetectConflicts(true)
	onDemand := o.InMemory || tablesSize(o.Dir) < maxOnDemandTables
	if !onDemand {
		opts = opts.WithNumCompactors(2)
	}
	if o.InMemory {
		opts = opts.WithDir("").WithValueDir("")
	} else if err := private(o.Dir); err != nil {
		return nil, fmt.Errorf("opening badger store at %s: %w", o.Dir, err)
	}
	db, err := badger.Open(opts)
	if err != nil {
		return nil, fmt.Errorf("opening badger store at %s: %w", o.Dir, err)
	}
	s := &DB{db: db, log: log, stop: make(chan struct{}), badgerCompacts: !onDemand}
	if !o.InMemory {
		s.dir = o.Dir
		if s.room, err = newRoom(o.Dir, log); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("opening badger store at %s: %w", o.Dir, err)
		}
	}
	s.narrow()
	if o.GCInterval >= 0 && !o.InMemory {
		every := o.GCInterval
		if every == 0 {
			every = 5 * time.Minute
		}
		s.wg.Add(1)
		go s.gcLoop(every)
	}
	return s, nil
}

// gcLoop runs value-log GC until it has nothing to rewrite, every interval.
func (s *DB) gcLoop(every time.Duration) {
	defer s.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.RunGC()
			s.narrow()
		}
	}
}

// RunGC runs value-log garbage collection until Badger reports that nothing
// is left to rewrite.
func (s *DB) RunGC() {
	for {
		if err := s.room.check(0); err != nil {
			return // it rewrites values: a write like any other
		}
		err := s.db.RunValueLogGC(0.5)
		if err == nil {
			continue
		}
		if !errors.Is(err, badger.ErrNoRewrite) && !errors.Is(err, badger.ErrRejected) {
			s.log.Warn("badger value log gc", zap.Error(err))
		}
		return
	}
}

// Get implements KV.
func (s *DB) Get(_ context.Context, key []byte) ([]byte, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return mapErr(err)
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	return out, err
}

// Set implements KV. Like every write, it returns store.ErrStorageFull,
// without writing, when the disk may not have room for it (see room.go).
func (s *DB) Set(_ context.Context, key, value []byte, ttl time.Duration) error {
	if err := s.writable(); err != nil {
		return err
	}
	defer s.wrote()
	return s.db.Update(func(txn *badger.Txn) error { return setEntry(txn, key, value, ttl) })
}

// Delete implements KV.
func (s *DB) Delete(_ context.Context, key []byte) error {
	if err := s.writable(); err != nil {
		return err
	}
	defer s.wrote()
	return s.db.Update(func(txn *badger.Txn) error { return txn.Delete(key) })
}

// maxConflictRetries bounds how often Update reruns a conflicting txn.
const maxConflictRetries = 100

// Update implements KV, retrying fn on transaction conflicts.
func (s *DB) Update(ctx context.Context, fn func(Txn) error) error {
	if err := s.writable(); err != nil {
		return err
	}
	defer s.wrote()
	for i := 0; ; i++ {
		err := s.db.Update(func(txn *badger.Txn) error { return fn(badgerTxn{txn}) })
		if !errors.Is(err, badger.ErrConflict) || i >= maxConflictRetries {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Scan implements KV.
func (s *DB) Scan(ctx context.Context, prefix []byte, o ScanOptions, fn func(key, value []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		io := badger.DefaultIteratorOptions
		io.Prefix = prefix
		io.Reverse = o.Reverse
		io.PrefetchValues = !o.KeysOnly
		io.PrefetchSize = 16
		it := txn.NewIterator(io)
		defer it.Close()
		seek := prefix
		switch {
		case bytes.Compare(o.Start, prefix) > 0:
			// Forward, the first key at or after Start; in reverse, the
			// last key at or before it.
			seek = o.Start
		case o.Reverse:
			// Seek to the last key with the prefix: prefix followed by 0xff bytes.
			seek = append(append([]byte{}, prefix...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		}
		for it.Seek(seek); it.ValidForPrefix(prefix); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			var val []byte
			if !o.KeysOnly {
				var err error
				if val, err = item.ValueCopy(nil); err != nil {
					return err
				}
			}
			if err := fn(item.Key(), val); err != nil {
				if errors.Is(err, store.ErrStop) {
					return nil
				}
				return err
			}
		}
		return nil
	})
}

// errClosed refuses a write that comes once Close has begun.
var errClosed = errors.New("badger: the store is closed")

// writable returns why a write must not proceed: Close has begun, or the
// disk may not have room for it (room.go).
func (s *DB) writable() error {
	if s.closing.Load() {
		return errClosed
	}
	return s.room.check(0)
}

// Close stops garbage collection and compaction and closes the database.
// On a disk without room for Badger's last flush (room.go), it leaves the
// database as a crash would, which loses nothing (Badger replays its
// memtable's log at the next open), rather than let the flush fault: it
// returns the error then, and the directory stays locked until the
// process exits.
func (s *DB) Close() error {
	close(s.stop)
	s.wg.Wait()
	s.compactMu.Lock()
	s.closed = true
	s.compactMu.Unlock()
	if err := s.room.flushable(); err != nil {
		s.log.Error("not closing the store: its last flush has no room on the disk; the next open replays its log", zap.Error(err))
		return err
	}
	s.drainLevelZero()
	err := s.db.Close()
	s.narrow()
	return err
}

// narrow gives the files Badger created since the last call the store's
// file mode (see private); a failure is logged, the directory still
// closes them to others.
func (s *DB) narrow() {
	if s.dir == "" {
		return
	}
	if err := private(s.dir); err != nil {
		s.log.Warn("narrowing the modes of the store's files", zap.Error(err))
	}
}

// drainLevelZero compacts level 0 before Badger's Close when it holds
// numLevelZeroTablesStall tables: Badger's flush then waits for a
// compaction, which only the store runs (compact.go), and Badger's Close,
// which waits for the flush, would wait forever. Writes through the store
// are refused from here on (errClosed).
func (s *DB) drainLevelZero() {
	s.closing.Store(true)
	if s.badgerCompacts || s.level0Tables() < numLevelZeroTables {
		return
	}
	if err := s.db.Flatten(1); err != nil {
		s.log.Warn("badger compaction before close", zap.Error(err))
	}
}

// Badger exposes the underlying database, for tests that read raw bytes.
func (s *DB) Badger() *badger.DB { return s.db }

type badgerTxn struct{ txn *badger.Txn }

func (t badgerTxn) Get(key []byte) ([]byte, error) {
	item, err := t.txn.Get(key)
	if err != nil {
		return nil, mapErr(err)
	}
	return item.ValueCopy(nil)
}

func (t badgerTxn) Set(key, value []byte, ttl time.Duration) error {
	return setEntry(t.txn, key, value, ttl)
}

func (t badgerTxn) Delete(key []byte) error { return t.txn.Delete(key) }

func setEntry(txn *badger.Txn, key, value []byte, ttl time.Duration) error {
	e := badger.NewEntry(key, value)
	if ttl > 0 {
		// Badger keeps expiry in whole seconds; round up so that a short
		// TTL never expires early.
		e = e.WithTTL((ttl + time.Second - 1).Truncate(time.Second))
	}
	return txn.SetEntry(e)
}

func mapErr(err error) error {
	if errors.Is(err, badger.ErrKeyNotFound) {
		return store.ErrNotFound
	}
	return err
}

// zapLogger adapts zap to badger.Logger (which needs Warningf).
type zapLogger struct{ s *zap.SugaredLogger }

func (l zapLogger) Errorf(f string, a ...any)   { l.s.Errorf(f, a...) }
func (l zapLogger) Warningf(f string, a ...any) { l.s.Warnf(f, a...) }
func (l zapLogger) Infof(f string, a ...any)    { l.s.Debugf(f, a...) }
func (l zapLogger) Debugf(f string, a ...any)   { l.s.Debugf(f, a...) }

// Interface guard.
var _ KV = (*DB)(nil)
