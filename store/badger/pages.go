package badger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// UserRecords implements store.Ledger. The cursor is the journal position
// of the last record returned. A page walks the user's record index from
// the cursor's stretch on and reads only the user's records from the
// journal, until it has one beyond the page. Newest first (Desc), it walks
// the index backwards from the cursor's stretch (or its end).
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
	expired := time.Now().Add(-l.retention)
	prefix := []byte(prefixUserRecords + esc(q.User) + "/")
	opts := ScanOptions{Reverse: q.Desc}
	if q.After != "" {
		opts.Start = userRecordsKey(q.User, from)
	}
	// past reports whether pos lies beyond the cursor, in the page's order.
	past := func(pos journal.Pos) bool {
		if q.After == "" {
			return true
		}
		if q.Desc {
			return pos.Less(from)
		}
		return from.Less(pos)
	}
	var out []store.Record
	var last, next journal.Pos
	err := l.db.Scan(ctx, prefix, opts, func(k, v []byte) error {
		seg, ok := parseUserRecordsKey(k)
		if !ok {
			return nil
		}
		offs, err := decodeOffsets(v)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		if q.Desc {
			slices.Sort(offs)
			slices.Reverse(offs)
		}
		for _, off := range offs {
			pos := journal.Pos{Segment: seg, Offset: off}
			if !past(pos) || !pos.Less(end) {
				continue
			}
			b, err := l.j.Read(pos)
			if errors.Is(err, journal.ErrNoEntry) {
				continue // expired with its segment
			}
			if errors.Is(err, journal.ErrCorrupt) {
				continue // the journal logged its region, once
			}
			if err != nil {
				return err
			}
			e, err := decodeEntry(b)
			if err != nil {
				return fmt.Errorf("decoding ledger record at %s: %w", pos, err)
			}
			if !e.appended.After(expired) || !q.Matches(&e.rec) {
				continue
			}
			if len(out) == q.Limit {
				next = last
				return store.ErrStop
			}
			out, last = append(out, e.rec), pos
		}
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	if next.IsZero() {
		return out, "", nil
	}
	return out, next.String(), nil
}
