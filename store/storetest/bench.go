package storetest

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Shape of the ledger BenchUsage fills: users with two keys each, a few
// models, over the last 60 days.
const (
	benchUsers  = 1000
	benchModels = 4
	benchDays   = 60
)

// BenchUsage fills r's ledger with n records (1000 users with two keys
// each, 4 models, 60 days) and measures the reads a console page makes:
// one user's usage over 30 days (the aggregates, grouped by the caller by
// day, model or key), every user's totals of this month (the users list),
// and a page of one user's records with filters, first and
// following, oldest and newest first. Each read must cost about the same whatever n is: it reads
// aggregates or one page, never the ledger.
func BenchUsage(b *testing.B, r store.Repos, n int) {
	ctx := context.Background()
	rng := rand.New(rand.NewSource(7))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	start := time.Now()
	const batch = 1000
	recs := make([]store.Record, 0, batch)
	for i := 0; i < n; i++ {
		u := rng.Intn(benchUsers)
		recs = append(recs, store.Record{
			ID:   fmt.Sprintf("bench-%d", i),
			Time: today.AddDate(0, 0, -rng.Intn(benchDays)).Add(time.Duration(rng.Intn(86400)) * time.Second),
			// Records arrive in time order in production; the shuffle here
			// only makes pages sparse for any one user.
			Endpoint: "chat", User: fmt.Sprintf("user-%04d", u), KeyID: fmt.Sprintf("key_%04d_%d", u, rng.Intn(2)),
			Model: fmt.Sprintf("model-%d", rng.Intn(benchModels)), Provider: "p",
			Usage:  store.Usage{Input: rng.Int63n(5000), Output: rng.Int63n(900)},
			Source: "reported", Status: 200, Outcome: []string{"ok", "ok", "ok", "partial"}[rng.Intn(4)],
			Tier: -1, Priced: true, Currency: "USD", Cost: rng.Int63n(10_000_000),
		})
		if len(recs) == batch || i == n-1 {
			if err := r.Ledger.Append(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = make([]store.Record, 0, batch)
		}
	}
	if err := r.Ledger.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled the ledger with %d records in %s", n, time.Since(start).Round(time.Second))
	since := today.AddDate(0, 0, -29).Format(store.DayLayout)
	until := today.Format(store.DayLayout)
	b.Run("user-30-days", func(b *testing.B) {
		for i := range b.N {
			f := store.UsageFilter{User: fmt.Sprintf("user-%04d", i%benchUsers), Since: since, Until: until}
			rows := 0
			if err := r.Ledger.Usage(ctx, f, func(store.Aggregate) error { rows++; return nil }); err != nil {
				b.Fatal(err)
			}
			if rows == 0 {
				b.Fatal("no aggregates")
			}
		}
	})
	b.Run("users-of-month", func(b *testing.B) {
		month := store.MonthOf(today)
		for range b.N {
			users := 0
			if err := r.Ledger.MonthTotals(ctx, month, func(store.UserTotals) error { users++; return nil }); err != nil {
				b.Fatal(err)
			}
			if users == 0 {
				b.Fatal("no users")
			}
		}
	})
	b.Run("user-records-page", func(b *testing.B) {
		for i := range b.N {
			q := store.RecordQuery{User: fmt.Sprintf("user-%04d", i%benchUsers), Limit: 50}
			page, next, err := r.Ledger.UserRecords(ctx, q)
			if err != nil || len(page) != 50 || next == "" {
				b.Fatalf("first page: %d records, next %q, %v", len(page), next, err)
			}
			q.After = next
			if page, _, err = r.Ledger.UserRecords(ctx, q); err != nil || len(page) == 0 {
				b.Fatalf("second page: %d records, %v", len(page), err)
			}
		}
	})
	b.Run("user-records-page-newest-first", func(b *testing.B) {
		for i := range b.N {
			q := store.RecordQuery{User: fmt.Sprintf("user-%04d", i%benchUsers), Limit: 50, Desc: true}
			page, next, err := r.Ledger.UserRecords(ctx, q)
			if err != nil || len(page) != 50 || next == "" {
				b.Fatalf("first page: %d records, next %q, %v", len(page), next, err)
			}
			q.After = next
			if page, _, err = r.Ledger.UserRecords(ctx, q); err != nil || len(page) == 0 {
				b.Fatalf("second page: %d records, %v", len(page), err)
			}
		}
	})
	b.Run("user-records-filtered-page", func(b *testing.B) {
		for i := range b.N {
			q := store.RecordQuery{User: fmt.Sprintf("user-%04d", i%benchUsers), Model: "model-1", Outcome: "partial", Limit: 20}
			if _, _, err := r.Ledger.UserRecords(ctx, q); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchRecords is the ledger size of the usage benchmarks: 1,000,000
// records, or 100,000 with -short.
func BenchRecords() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}
