package badger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger/journal"
)

// TestLedgerSkipsDamagedSegment writes a ledger journal of three
// segments, counts it, and flips a byte of a record in the middle
// segment: Records and UserRecords list every other record, the
// aggregates still count all of them, and the damage is logged once and
// reported.
func TestLedgerSkipsDamagedSegment(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	dir := t.TempDir()
	now := time.Now()
	c := now.Add(-5 * time.Hour)
	j, err := journal.Open(journal.Options{Dir: dir, SegmentAge: time.Hour, Now: func() time.Time { return c }})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	var middle []journal.Pos
	for s := range 3 {
		var entries [][]byte
		for i := range 3 {
			rec := testRecord(fmt.Sprintf("s%d-r%d", s+1, i+1), 10)
			all = append(all, rec.ID)
			b := appendEntry(nil, &rec, false, now)
			entries = append(entries, b)
		}
		pos, _, err := j.Append(entries)
		if err != nil {
			t.Fatal(err)
		}
		if s == 1 {
			middle = pos
		}
		c = c.Add(2 * time.Hour)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	l := openLedger(t, db, dir) // counts the nine records
	if got := ids(t, l); got != fmt.Sprint(all) {
		t.Fatalf("records before the damage: %s", got)
	}
	l.Close()

	segs, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	if err != nil || len(segs) != 3 {
		t.Fatalf("segments %v, %v", segs, err)
	}
	b, err := os.ReadFile(segs[1])
	if err != nil {
		t.Fatal(err)
	}
	b[middle[1].Offset+12] ^= 0x20 // a byte of the record s2-r2
	if err := os.WriteFile(segs[1], b, 0o600); err != nil {
		t.Fatal(err)
	}

	core, logs := observer.New(zapcore.ErrorLevel)
	l, err = OpenLedger(db, dir, 0, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A user's page before any full scan: the damaged region is logged
	// once, however often the page is viewed, and reported at once.
	for range 3 {
		page, _, err := l.UserRecords(ctx, store.RecordQuery{User: "alice", Limit: 100})
		if err != nil || len(page) != 8 {
			t.Fatalf("a page of records over the damage: %d records, %v", len(page), err)
		}
	}
	if n := logs.FilterMessageSnippet("damaged region").Len(); n != 1 {
		t.Errorf("%d log lines for the damaged region over three views of the page, want 1: %v", n, logs.All())
	}
	if n := len(l.Damaged()); n != 1 {
		t.Errorf("Damaged() after the page views: %d regions, want 1", n)
	}
	want := fmt.Sprint(append(all[:4:4], all[5:]...))
	for range 2 {
		if got := ids(t, l); got != want {
			t.Errorf("records: %s, want %s", got, want)
		}
	}
	page, _, err := l.UserRecords(ctx, store.RecordQuery{User: "alice", Limit: 100})
	if err != nil {
		t.Fatalf("a page of records over the damage: %v", err)
	}
	if len(page) != 8 {
		t.Errorf("a page of %d records, want 8", len(page))
	}
	if tot := usdTotals(t, l); tot.Requests != 9 || tot.Cost != 90 {
		t.Errorf("aggregate %+v, want the 9 records counted before the damage", tot)
	}
	if _, err := l.Get(ctx, "s2-r2"); err == nil {
		t.Error("Get of the damaged record succeeded")
	}

	damaged := l.Damaged()
	if len(damaged) != 1 || damaged[0].File != filepath.Base(segs[1]) || damaged[0].Offset != middle[1].Offset ||
		damaged[0].Bytes != middle[2].Offset-middle[1].Offset {
		t.Errorf("Damaged() = %+v, want the record at %s", damaged, middle[1])
	}
	entries := logs.FilterMessageSnippet("damaged region").All()
	if len(entries) != 1 {
		t.Fatalf("%d damage log lines, want 1: %v", len(entries), logs.All())
	}
	msg := entries[0].Message
	for _, s := range []string{"restore the segment from a backup", "usage reports and spend", "stay right"} {
		if !strings.Contains(msg, s) {
			t.Errorf("log line %q does not say %q", msg, s)
		}
	}
	if f := entries[0].ContextMap(); f["segment"] != segs[1] || f["offset"] != middle[1].Offset {
		t.Errorf("log fields %v, want segment %s at offset %d", f, segs[1], middle[1].Offset)
	}
}
