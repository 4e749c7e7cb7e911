package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// Get implements store.Ledger: it finds the records of Insert.
func (l *Ledger) Get(ctx context.Context, id string) (store.Record, error) {
	idx, err := l.db.Get(ctx, recordIDKey(id))
	if err != nil {
		return store.Record{}, err
	}
	pos, ok := journalPosFromIndex(idx)
	if !ok {
		// An index entry of a version before the journal: its record was
		// in the store, whose legacy formats are no longer read.
		return store.Record{}, store.ErrNotFound
	}
	b, err := l.j.Read(pos)
	if errors.Is(err, journal.ErrNoEntry) {
		return store.Record{}, store.ErrNotFound
	}
	if err != nil {
		return store.Record{}, err
	}
	e, err := decodeEntry(b)
	if err != nil {
		return store.Record{}, fmt.Errorf("decoding ledger record %s: %w", id, err)
	}
	if e.rec.ID != id {
		// The index outlived its entry (a journal repaired after a crash
		// of the machine): the position names another record.
		return store.Record{}, store.ErrNotFound
	}
	return e.rec, nil
}

// Records implements store.Ledger.
func (l *Ledger) Records(ctx context.Context, since, until time.Time, fn func(store.Record) error) error {
	end := l.countedEnd()
	if end.IsZero() {
		return nil
	}
	expired := time.Now().Add(-l.retention)
	// A record is written after its Time, so segments that were complete
	// before since hold none of its records.
	return l.j.Scan(journal.Pos{}, end, since, func(pos journal.Pos, b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := decodeEntry(b)
		if err != nil {
			return fmt.Errorf("decoding ledger record at %s: %w", pos, err)
		}
		if !e.appended.After(expired) || !since.IsZero() && e.rec.Time.Before(since) || !until.IsZero() && !e.rec.Time.Before(until) {
			return nil
		}
		if err := fn(e.rec); err != nil {
			if errors.Is(err, store.ErrStop) {
				return journal.ErrStop
			}
			return err
		}
		return nil
	})
}
