package badger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// UserRecords implements store.Ledger. The cursor is the journal position
// of the last record returned: a page scans the journal from there on,
// and only until it has a record beyond the page, never from the start.
// Segments complete before q.Since are skipped unread.
func (l *Ledger) UserRecords(ctx context.Context, q store.RecordQuery) ([]store.Record, string, error) {
	if q.User == "" || q.Limit < 1 {
		return nil, "", fmt.Errorf("a page of records needs a user and a limit")
	}
	var from journal.Pos
	if q.After != "" {
		if _, err := fmt.Sscanf(q.After, "%d:%d", &from.Segment, &from.Offset); err != nil || from.String() != q.After {
			return nil, "", fmt.Errorf("bad cursor %q", q.After)
		}
	}
	end := l.countedEnd()
	if end.IsZero() {
		return nil, "", nil
	}
	expired := time.Now().Add(-l.retention)
	var out []store.Record
	var last, next journal.Pos
	err := l.j.Scan(from, end, q.Since, func(pos journal.Pos, b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if q.After != "" && pos == from {
			return nil // the previous page's last record
		}
		e, err := decodeEntry(b)
		if err != nil {
			return fmt.Errorf("decoding ledger record at %s: %w", pos, err)
		}
		if !e.appended.After(expired) || !q.Matches(&e.rec) {
			return nil
		}
		if len(out) == q.Limit {
			next = last
			return journal.ErrStop
		}
		out, last = append(out, e.rec), pos
		return nil
	})
	if err != nil && !errors.Is(err, journal.ErrStop) {
		return nil, "", err
	}
	if next.IsZero() {
		return out, "", nil
	}
	return out, next.String(), nil
}
