package badger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// The record index by user: where in the journal each user's records are,
// so that a page of one user's records reads those records and no others.
// Records of one user in one stretch of a segment (recBucket bytes) share
// one key, whose value lists their offsets:
//
//	lr/<user>/<segment, 16 hex>/<offset / recBucket, 8 hex>  uvarint offsets, ascending, with a TTL past the retention
//	l/lr                                                    set once the records written before the index are in it
//
// A count writes one key per user and stretch, not per record.
const (
	prefixUserRecords = "lr/"
	keyUserRecsBuilt  = "l/lr"
	recBucket         = 1 << 20
)

// userRecordsKey is the index key of user's records in pos's stretch.
func userRecordsKey(user string, pos journal.Pos) []byte {
	return fmt.Appendf(nil, "%s%s/%016x/%08x", prefixUserRecords, esc(user), pos.Segment, pos.Offset/recBucket)
}

// parseUserRecordsKey returns the segment of an index key.
func parseUserRecordsKey(k []byte) (uint64, bool) {
	parts := strings.Split(string(k), "/")
	if len(parts) != 4 {
		return 0, false
	}
	seg, err := strconv.ParseUint(parts[2], 16, 64)
	return seg, err == nil
}

// indexTTL keeps index keys a day past the retention of their records.
func (l *Ledger) indexTTL() time.Duration { return l.retention + 24*time.Hour }

// indexRecords adds recs[i], at journal position at[i], to the index of
// its user, in txn. at may be nil (nothing is indexed).
func (l *Ledger) indexRecords(txn Txn, recs []*store.Record, at []journal.Pos) error {
	if len(at) != len(recs) {
		return nil
	}
	adds := map[string][]int64{}
	var order []string
	for i, rec := range recs {
		if rec.User == "" || at[i].IsZero() {
			continue
		}
		k := string(userRecordsKey(rec.User, at[i]))
		if _, ok := adds[k]; !ok {
			order = append(order, k)
		}
		adds[k] = append(adds[k], at[i].Offset)
	}
	for _, k := range order {
		if err := appendOffsets(txn, []byte(k), adds[k], l.indexTTL()); err != nil {
			return err
		}
	}
	return nil
}

// appendOffsets appends offs (ascending, after those stored) to the list
// under key.
func appendOffsets(txn Txn, key []byte, offs []int64, ttl time.Duration) error {
	old, err := txn.Get(key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	val := append([]byte(nil), old...)
	for _, o := range offs {
		val = binary.AppendUvarint(val, uint64(o))
	}
	return txn.Set(key, val, ttl)
}

// decodeOffsets decodes an index value.
func decodeOffsets(v []byte) ([]int64, error) {
	var out []int64
	for len(v) > 0 {
		o, n := binary.Uvarint(v)
		if n <= 0 {
			return nil, errors.New("malformed record index entry")
		}
		out, v = append(out, int64(o)), v[n:]
	}
	return out, nil
}

// buildRecordIndex indexes, once, the records a store counted before it
// had the record index: the journal up to the position the DB counts (the
// records after it are indexed when they are counted). The index entries
// are built in memory and written with Set, so a build cut short by a
// crash is simply done again.
func (l *Ledger) buildRecordIndex(ctx context.Context) error {
	if _, err := l.db.Get(ctx, []byte(keyUserRecsBuilt)); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var upTo journal.Pos
	if v, err := l.db.Get(ctx, []byte(keyJournalCount)); err == nil {
		if err := upTo.UnmarshalBinary(v); err != nil {
			return err
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	entries := map[string][]byte{}
	var order []string
	n := 0
	if !upTo.IsZero() {
		err := l.j.Scan(journal.Pos{}, upTo, time.Time{}, func(pos journal.Pos, b []byte) error {
			e, err := decodeEntry(b)
			if err != nil || e.rec.User == "" {
				return nil
			}
			k := string(userRecordsKey(e.rec.User, pos))
			if _, ok := entries[k]; !ok {
				order = append(order, k)
			}
			entries[k] = binary.AppendUvarint(entries[k], uint64(pos.Offset))
			n++
			return nil
		})
		if err != nil {
			return fmt.Errorf("building the record index by user: %w", err)
		}
	}
	for i := 0; i < len(order); i += indexBatch {
		batch := order[i:min(i+indexBatch, len(order))]
		err := l.db.Update(ctx, func(txn Txn) error {
			for _, k := range batch {
				if err := txn.Set([]byte(k), entries[k], l.indexTTL()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("building the record index by user: %w", err)
		}
	}
	if n > 0 {
		l.log.Info("built the record index by user", zap.Int("records", n))
	}
	return l.db.Set(ctx, []byte(keyUserRecsBuilt), []byte{1}, 0)
}
