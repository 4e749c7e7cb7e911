package billing

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSearchRecordsAcrossUsers pages through every user's records that
// match a model and an outcome, user by user, and exports them as CSV.
func TestSearchRecordsAcrossUsers(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	ctx := t.Context()
	now := time.Now().UTC()
	n := 0
	add := func(user, model, outcome string, at time.Time) {
		n++
		rec := testRecord(fmt.Sprintf("r%02d", n), 1000)
		rec.User, rec.Model, rec.Outcome, rec.Time, rec.KeyID = user, model, outcome, at, "key_"+user
		if _, err := l.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		add("carol", "m1", OutcomeFailed, now.Add(-time.Duration(i)*time.Minute))
		add("bob", "m1", OutcomeOK, now)
		add("alice", "m1", OutcomeFailed, now)
		add("dave", "m2", OutcomeFailed, now)
	}
	add("erin", "m1", OutcomeFailed, now.AddDate(0, 0, -40)) // before the default range
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	search := func(q RecordQuery) string {
		var got []string
		for pages := 0; ; pages++ {
			if pages > 5 {
				t.Fatal("the search does not end")
			}
			p, err := l.SearchRecords(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range p.Records {
				got = append(got, r.User+"/"+r.ID)
			}
			if !p.HasMore {
				break
			}
			q.After = p.Next
		}
		return strings.Join(got, " ")
	}
	if got, want := search(RecordQuery{Model: "m1", Outcome: OutcomeFailed, Limit: 2}), "alice/r03 alice/r07 alice/r11 carol/r01 carol/r05 carol/r09"; got != want {
		t.Errorf("search pages = %s, want %s", got, want)
	}
	// Newest first: each user's records in the reverse of their writes,
	// the cursors paging on toward older ones.
	if got, want := search(RecordQuery{Model: "m1", Outcome: OutcomeFailed, Limit: 2, Desc: true}), "alice/r11 alice/r07 alice/r03 carol/r09 carol/r05 carol/r01"; got != want {
		t.Errorf("search pages newest first = %s, want %s", got, want)
	}
	// One user's search reads as UserRecords.
	p, err := l.SearchRecords(ctx, RecordQuery{User: "dave", Outcome: OutcomeFailed})
	if err != nil || len(p.Records) != 3 || p.HasMore {
		t.Errorf("dave's search: %+v, %v", p, err)
	}
	// An older range finds erin.
	p, err = l.SearchRecords(ctx, RecordQuery{Since: now.AddDate(0, 0, -50), Model: "m1", Outcome: OutcomeFailed})
	if err != nil || len(p.Records) != 7 || p.Records[6].User != "erin" {
		t.Errorf("search over 50 days: %+v, %v", p, err)
	}
	if _, err := l.SearchRecords(ctx, RecordQuery{After: "not a cursor!"}); err == nil {
		t.Error("a bad cursor is accepted")
	}
	var csv bytes.Buffer
	if err := l.ExportCSV(ctx, RecordQuery{Model: "m1", Outcome: OutcomeFailed}, &csv); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 7 || !strings.HasPrefix(lines[1], "r03,") {
		t.Errorf("CSV of every user's failed m1 requests:\n%s", csv.String())
	}
}

// TestSearchRecordsBoundsUsersPerPage pages through a search that only the
// last of many users matches: each page looks at SearchUsersPerPage users,
// and the last one finds the record.
func TestSearchRecordsBoundsUsersPerPage(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	ctx := t.Context()
	n := SearchUsersPerPage*2 + 10
	for i := range n {
		rec := testRecord(fmt.Sprintf("r%03d", i), 1000)
		rec.User, rec.Time = fmt.Sprintf("user-%03d", i), time.Now().UTC()
		if i == n-1 {
			rec.Model = "rare"
		}
		if _, err := l.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	q := RecordQuery{Model: "rare"}
	var sizes []int
	var found []string
	for {
		p, err := l.SearchRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(p.Records))
		for _, r := range p.Records {
			found = append(found, r.ID)
		}
		if !p.HasMore || len(sizes) > 5 {
			break
		}
		q.After = p.Next
	}
	if fmt.Sprint(sizes) != "[0 0 1]" || fmt.Sprint(found) != fmt.Sprintf("[r%03d]", n-1) {
		t.Errorf("pages of %v records, found %v; want [0 0 1] and the last user's", sizes, found)
	}
}

// TestSearchRecordsBoundsAggregatesPerPage searches for an outcome nobody
// had among users with many aggregates: a page stops looking at users
// once it read searchAggregatesPerPage of them, and the search still ends.
func TestSearchRecordsBoundsAggregatesPerPage(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	ctx := t.Context()
	const users, models = 4, searchAggregatesPerPage/2 + 1
	now := time.Now().UTC()
	for u := range users {
		for m := range models {
			rec := testRecord(fmt.Sprintf("r%d-%d", u, m), 1000)
			rec.User, rec.Model, rec.Time = fmt.Sprintf("user-%d", u), fmt.Sprintf("m%d", m), now
			l.Enqueue(rec, nil)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	q := RecordQuery{Outcome: OutcomeFailed}
	pages := 0
	for {
		p, err := l.SearchRecords(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Records) != 0 || pages > users {
			t.Fatalf("page %d: %+v", pages, p)
		}
		if !p.HasMore {
			break
		}
		q.After = p.Next
	}
	// Two users' aggregates fill a page's reads: pages of users 0-1 and
	// 2-3.
	if pages != 2 {
		t.Errorf("%d pages, want 2", pages)
	}
}

// TestSearchRecordsLongRange: a search over every representable day finds
// the records of every user, and its work does not grow with the range.
func TestSearchRecordsLongRange(t *testing.T) {
	l := newLedger(t, openStore(t), 0)
	ctx := t.Context()
	now := time.Now().UTC()
	for i, at := range []time.Time{now, now.AddDate(0, 0, -40)} {
		rec := testRecord(fmt.Sprintf("r%d", i), 1000)
		rec.User, rec.Model, rec.Time, rec.KeyID = []string{"bob", "erin"}[i], "m1", at, "key_x"
		if _, err := l.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		since, until time.Time
		want         string
	}{
		{"the last year", now.AddDate(-1, 0, 0), now.Add(time.Hour), "bob/r0 erin/r1"},
		// 0001-01-01 is the zero time, an open bound (the last 30 days).
		{"every representable day", time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), "bob/r0 erin/r1"},
		{"ten years ago", now.AddDate(-20, 0, 0), now.AddDate(-10, 0, 0), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := RecordQuery{Since: tc.since, Until: tc.until, Limit: 10}
			p, err := l.SearchRecords(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range p.Records {
				got = append(got, r.User+"/"+r.ID)
			}
			if strings.Join(got, " ") != tc.want || p.HasMore {
				t.Errorf("found %v (more: %v), want %s", got, p.HasMore, tc.want)
			}
			// Reading the totals of each of the range's months cost
			// millions of allocations for the widest range.
			if n := testing.AllocsPerRun(2, func() { _, _ = l.SearchRecords(ctx, q) }); n > 20000 {
				t.Errorf("the search allocated %.0f times", n)
			}
		})
	}
}
