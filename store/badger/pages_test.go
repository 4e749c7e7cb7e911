package badger

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/store"
)

// TestUserRecordsAcrossIndexStretches pages through a user's records that
// span several stretches of the record index (recBucket of journal each),
// among another user's, oldest and newest first: every record once, in
// write order and in its reverse, whatever stretch a cursor falls in.
func TestUserRecordsAcrossIndexStretches(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	l := openLedger(t, db, t.TempDir())
	long := strings.Repeat("m", 4000) // about 4 KB a record: 3 MiB in all
	var want []string
	for b := range 8 {
		var batch []store.Record
		for i := range 100 {
			rec := testRecord(fmt.Sprintf("r-%d-%03d", b, i), 1)
			rec.Model = long
			if i%3 == 0 {
				rec.User = "bob"
			} else {
				want = append(want, rec.ID)
			}
			batch = append(batch, rec)
		}
		if err := l.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stretches := 0
	if err := db.Scan(ctx, []byte(prefixUserRecords+"alice/"), ScanOptions{KeysOnly: true}, func(_, _ []byte) error {
		stretches++
		return nil
	}); err != nil || stretches < 3 {
		t.Fatalf("alice's records span %d stretches of the index (%v), want 3 or more", stretches, err)
	}
	for _, desc := range []bool{false, true} {
		q := store.RecordQuery{User: "alice", Limit: 37, Desc: desc}
		var got []string
		for pages := 0; pages < 100; pages++ {
			page, next, err := l.UserRecords(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
			}
			if next == "" {
				break
			}
			q.After = next
		}
		w := slices.Clone(want)
		if desc {
			slices.Reverse(w)
		}
		if !slices.Equal(got, w) {
			t.Errorf("desc %v: paged %d records, want %d in order\n%v", desc, len(got), len(w), got)
		}
	}
}
