package caddymodule

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

// Shape of the ledger BenchmarkConsolePages fills: users with two keys
// each, a few models, over the last 60 days.
const (
	consoleBenchUsers  = 1000
	consoleBenchModels = 4
	consoleBenchDays   = 60
)

// BenchmarkConsolePages renders every console page on a Badger store of
// 1,000,000 ledger records (100,000 with -short) across 1,000 users with
// two keys each, 4 models and 60 days, and reports each page's ms/page.
// The store is filled once per run (by the store's batch append, a
// thousand records a batch); the pages read aggregates and one page of
// records, so their time does not grow with the ledger.
func BenchmarkConsolePages(b *testing.B) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{StorageRaw: badgerJSON(b.TempDir())}
	if err := a.Provision(ctx); err != nil {
		b.Fatal(err)
	}
	if err := a.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = a.Stop() }()
	st := a.current()
	n := consoleBenchRecords()
	keyIDs := fillConsoleBench(b, st, n)
	svc := consoleServices{app: a}
	h, err := console.New(console.Config{
		Prefix: "/console", Admins: []string{"admin"}, CSRFKey: make([]byte, 32),
		Services: console.Services{Keys: svc, Usage: svc, Tasks: consoleTasks{svc}, Operators: svc},
	})
	if err != nil {
		b.Fatal(err)
	}
	today := time.Now().UTC().Format(store.DayLayout)
	user := func(i int) string { return fmt.Sprintf("user-%04d", i%consoleBenchUsers) }
	pages := []struct {
		name string
		who  func(i int) string
		path func(i int) string
	}{
		{"keys", user, func(int) string { return "/console/keys" }},
		{"usage", user, func(int) string { return "/console/usage" }},
		{"usage-filtered", user, func(i int) string {
			return "/console/usage?" + url.Values{"model": {"model-1"}, "outcome": {"partial"}, "key": {keyIDs[user(i)][i%2]}}.Encode()
		}},
		{"usage-next-page", user, nil},
		{"tasks", user, func(int) string { return "/console/tasks" }},
		{"operators", func(int) string { return "admin" }, func(int) string { return "/console/operators" }},
		{"operators-ledger-search", func(int) string { return "admin" }, func(i int) string {
			return "/console/operators/ledger?" + url.Values{"model": {"model-2"}, "outcome": {"partial"}, "until": {today}}.Encode()
		}},
		{"operators-ledger-search-user", func(int) string { return "admin" }, func(i int) string {
			return "/console/operators/ledger?" + url.Values{"user": {user(i)}, "outcome": {"partial"}}.Encode()
		}},
		{"operators-ledger-search-key", func(int) string { return "admin" }, func(i int) string {
			return "/console/operators/ledger?" + url.Values{"key": {keyIDs[user(i)][1]}}.Encode()
		}},
		// The worst case: a model nobody used, so that every user of the
		// range is looked at (in the day aggregates) and none is read.
		{"operators-ledger-search-none", func(int) string { return "admin" }, func(int) string {
			return "/console/operators/ledger?" + url.Values{"model": {"model-unused"}}.Encode()
		}},
		// An outcome nobody had: the users' aggregates are read, not only
		// their keys.
		{"operators-ledger-search-none-outcome", func(int) string { return "admin" }, func(int) string {
			return "/console/operators/ledger?" + url.Values{"outcome": {"failed"}}.Encode()
		}},
	}
	get := func(b *testing.B, who, path string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil), who)
		if w.Code != http.StatusOK {
			b.Fatalf("GET %s as %s: %d %s", path, who, w.Code, w.Body.String())
		}
		return w
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			for i := range b.N {
				if p.path != nil {
					get(b, p.who(i), p.path(i))
					continue
				}
				// The second page of the user's requests, from the first
				// page's cursor.
				b.StopTimer()
				first, err := svc.Records(context.Background(), billing.RecordQuery{User: user(i), Limit: 20,
					Since: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -29)})
				if err != nil || !first.HasMore {
					b.Fatalf("first page: has more %v, %v", first != nil && first.HasMore, err)
				}
				b.StartTimer()
				get(b, user(i), "/console/usage?"+url.Values{"after": {first.Next}}.Encode())
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}

// consoleBenchRecords is the ledger size of BenchmarkConsolePages.
func consoleBenchRecords() int {
	if testing.Short() {
		return 100_000
	}
	return 1_000_000
}

// fillConsoleBench creates two keys for each bench user and appends n
// records of theirs, spread over the last 60 days, in batches of a
// thousand. It returns each user's key ids.
func fillConsoleBench(b *testing.B, st *state, n int) map[string][2]string {
	ctx := context.Background()
	start := time.Now()
	ids := map[string][2]string{}
	for u := range consoleBenchUsers {
		user := fmt.Sprintf("user-%04d", u)
		var pair [2]string
		for i := range pair {
			_, k, err := st.keys.Create(ctx, keys.CreateOptions{User: user, Name: fmt.Sprintf("key %d", i)})
			if err != nil {
				b.Fatal(err)
			}
			pair[i] = k.ID
		}
		ids[user] = pair
	}
	rng := rand.New(rand.NewSource(7))
	today := time.Now().UTC().Truncate(24 * time.Hour)
	const batch = 1000
	recs := make([]store.Record, 0, batch)
	for i := range n {
		u := rng.Intn(consoleBenchUsers)
		user := fmt.Sprintf("user-%04d", u)
		recs = append(recs, store.Record{
			ID:       fmt.Sprintf("bench-%d", i),
			Time:     today.AddDate(0, 0, -rng.Intn(consoleBenchDays)).Add(time.Duration(rng.Intn(86400)) * time.Second),
			Endpoint: "chat", User: user, KeyID: ids[user][rng.Intn(2)],
			Model: fmt.Sprintf("model-%d", rng.Intn(consoleBenchModels)), Provider: "p",
			Usage:  store.Usage{Input: rng.Int63n(5000), Output: rng.Int63n(900)},
			Source: "reported", Status: 200, Outcome: []string{"ok", "ok", "ok", "partial"}[rng.Intn(4)],
			Tier: -1, Priced: true, Currency: "USD", Cost: rng.Int63n(10_000_000),
		})
		if len(recs) == batch || i == n-1 {
			if err := st.repos.Ledger.Append(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = make([]store.Record, 0, batch)
		}
	}
	if err := st.repos.Ledger.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d keys and filled the ledger with %d records in %s", 2*consoleBenchUsers, n, time.Since(start).Round(time.Second))
	return ids
}
