package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// randomRecords returns n records of a few users, keys, models, days and
// currencies, some unpriced, with IDs prefix-<i>.
func randomRecords(rng *rand.Rand, prefix string, n int) []store.Record {
	day := time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)
	users := []string{"alice", "bob", "team/ä"}
	models := []string{"gpt-x", "claude/y"}
	currencies := []string{"USD", "CNY"}
	sources := []string{"reported", "estimated", ""}
	outcomes := []string{"ok", "partial", "upstream_error"}
	out := make([]store.Record, n)
	for i := range out {
		u := rng.Intn(len(users))
		rec := store.Record{
			ID:       fmt.Sprintf("%s-%d", prefix, i),
			Time:     day.Add(time.Duration(rng.Intn(4*24*60)) * time.Minute), // four days, across a month's end
			Endpoint: "chat", User: users[u], KeyID: fmt.Sprintf("key_%d%d", u, rng.Intn(2)),
			Model: models[rng.Intn(len(models))], Provider: "p",
			Usage:       store.Usage{Input: rng.Int63n(5000), CacheRead: rng.Int63n(100), Output: rng.Int63n(900), Reasoning: rng.Int63n(10)},
			ServiceTier: []string{"", "flex", "priority"}[rng.Intn(3)],
			Deployment:  []string{"", "p/gpt-x-2024", "q/gpt-x"}[rng.Intn(3)],
			Source:      sources[rng.Intn(len(sources))], Status: 200, Outcome: outcomes[rng.Intn(len(outcomes))],
			Images: rng.Intn(2), VideoMillis: rng.Int63n(3) * 1000, Tier: rng.Intn(2),
		}
		if rng.Intn(2) > 0 {
			rec.Usage.CacheCreation = rng.Int63n(400)
			rec.Usage.CacheCreation1h = rng.Int63n(rec.Usage.CacheCreation + 1)
		}
		if rec.Deployment != "" && rng.Intn(3) == 0 {
			rec.ServedModel = "fallback-" + rec.Model
		}
		if rng.Intn(3) == 0 {
			// The charges beyond plain tokens (issue #31), some unpriced.
			rec.Usage.AudioInput, rec.Usage.AudioOutput = rng.Int63n(rec.Usage.Input+1), rng.Int63n(rec.Usage.Output+1)
			rec.Usage.ImageInput, rec.Usage.ImageOutput = rng.Int63n(50), rng.Int63n(50)
			rec.Usage.WebSearches, rec.Usage.WebFetches, rec.Usage.FileSearches = rng.Int63n(4), rng.Int63n(3), rng.Int63n(3)
			rec.Usage.CodeSessions, rec.Usage.ImageCalls = rng.Int63n(2), rng.Int63n(3)
			rec.Unpriced = []string{"", "web_search", "audio_input,image_generation"}[rng.Intn(3)]
		}
		if rng.Intn(4) == 0 {
			// The quantities of speech, transcriptions and rerank (issue
			// #33).
			rec.Usage.Characters, rec.Usage.AudioMillis, rec.Usage.SearchUnits = rng.Int63n(5000), rng.Int63n(600_000), rng.Int63n(5)
		}
		if rng.Intn(4) > 0 {
			// How long it took (issue #35); 0: not measured.
			rec.DurationMillis = 1 + rng.Int63n(600_000)
		}
		if rng.Intn(5) > 0 {
			rec.Priced, rec.Currency, rec.Cost = true, currencies[rng.Intn(len(currencies))], rng.Int63n(2_000_000_000)
		}
		out[i] = rec
	}
	return out
}

// RunLedger checks store.Ledger: durable appends and idempotent inserts,
// records in write order and by range, aggregates and spend counters
// equal to the sums of the records, filters, and all of it across a
// restart.
func RunLedger(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	rng := rand.New(rand.NewSource(1))
	appended := randomRecords(rng, "req", 300)
	inserted := randomRecords(rng, "task", 40)
	for i := 0; i < len(appended); i += 64 {
		must(t, h.r.Ledger.Append(ctx, appended[i:min(i+64, len(appended))]))
	}
	var written []store.Record
	written = append(written, appended...)
	for i, rec := range inserted {
		fresh, err := h.r.Ledger.Insert(ctx, rec)
		if err != nil || !fresh {
			t.Fatalf("Insert(%s) = %v, %v; want a new record", rec.ID, fresh, err)
		}
		// The same ID again, even with other content, changes nothing.
		again := rec
		again.Cost += 1000
		if fresh, err := h.r.Ledger.Insert(ctx, again); err != nil || fresh {
			t.Fatalf("Test %d: Insert(%s) again = %v, %v; want a no-op", i, rec.ID, fresh, err)
		}
		written = append(written, rec)
	}
	must(t, h.r.Ledger.Flush(ctx))
	if err := h.r.Ledger.Err(); err != nil {
		t.Fatalf("Err = %v on a healthy ledger", err)
	}
	check := func(when string) {
		t.Helper()
		checkRecords(t, h.r.Ledger, written, when)
		checkUsage(t, h.r.Ledger, written, when)
		checkSpend(t, h.r.Budgets, written, when)
		checkUserRecords(t, h.r.Ledger, written, when)
		checkMonthTotals(t, h.r.Ledger, written, when)
		for _, rec := range inserted[:5] {
			got, err := h.r.Ledger.Get(ctx, rec.ID)
			if err != nil || !sameRecord(got, rec) {
				t.Errorf("%s: Get(%s) = %+v, %v; want %+v", when, rec.ID, got, err, rec)
			}
		}
		if _, err := h.r.Ledger.Get(ctx, "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: Get(missing) = %v, want ErrNotFound", when, err)
		}
	}
	check("at once")
	b.reopen(t, h)
	check("after reopening")
	// Inserts stay idempotent across a restart.
	if fresh, err := h.r.Ledger.Insert(ctx, inserted[0]); err != nil || fresh {
		t.Errorf("Insert after reopening = %v, %v; want a no-op", fresh, err)
	}
}

// sameRecord compares records, times by instant.
func sameRecord(a, b store.Record) bool {
	if !a.Time.Equal(b.Time) {
		return false
	}
	a.Time, b.Time = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

// checkRecords checks Records against the records written, in full, by
// ranges, and that ErrStop stops it.
func checkRecords(t *testing.T, l store.Ledger, written []store.Record, when string) {
	t.Helper()
	ctx := context.Background()
	var got []store.Record
	must(t, l.Records(ctx, time.Time{}, time.Time{}, func(r store.Record) error {
		got = append(got, r)
		return nil
	}))
	if len(got) != len(written) {
		t.Fatalf("%s: Records returned %d records, want %d", when, len(got), len(written))
	}
	for i := range got {
		if !sameRecord(got[i], written[i]) {
			t.Fatalf("%s: record %d = %+v, want %+v (in the order written)", when, i, got[i], written[i])
		}
	}
	since, until := written[0].Time.Add(-time.Hour), written[0].Time.Add(20*time.Hour)
	want := 0
	for _, r := range written {
		if !r.Time.Before(since) && r.Time.Before(until) {
			want++
		}
	}
	n := 0
	must(t, l.Records(ctx, since, until, func(r store.Record) error {
		if r.Time.Before(since) || !r.Time.Before(until) {
			t.Errorf("%s: Records(%v, %v) returned %s at %v", when, since, until, r.ID, r.Time)
		}
		n++
		return nil
	}))
	if n != want {
		t.Errorf("%s: Records in a range returned %d, want %d", when, n, want)
	}
	n = 0
	if err := l.Records(ctx, time.Time{}, time.Time{}, func(store.Record) error { n++; return store.ErrStop }); err != nil || n != 1 {
		t.Errorf("%s: Records stopped with ErrStop after %d calls, %v", when, n, err)
	}
}

// checkUsage checks that every aggregate equals the sum of its records,
// unfiltered and filtered.
func checkUsage(t *testing.T, l store.Ledger, written []store.Record, when string) {
	t.Helper()
	days := map[string]bool{}
	for _, r := range written {
		days[store.KeyOf(&r).Day] = true
	}
	var someDay string
	for d := range days {
		if someDay == "" || d > someDay {
			someDay = d
		}
	}
	for i, f := range []store.UsageFilter{
		{},
		{User: "alice"},
		{User: "team/ä", Model: "claude/y"},
		{KeyID: "key_10"},
		{Since: someDay},
		{Until: someDay},
		{Since: someDay, Until: someDay},
		{User: "bob", Since: someDay},
		{User: "alice", KeyID: "key_01", Until: someDay},
		{User: "team/ä", Since: someDay, Until: someDay},
	} {
		want := map[store.AggregateKey]*store.Totals{}
		for _, r := range written {
			k := store.KeyOf(&r)
			if f.User != "" && k.User != f.User || f.KeyID != "" && k.KeyID != f.KeyID || f.Model != "" && k.Model != f.Model ||
				f.Since != "" && k.Day < f.Since || f.Until != "" && k.Day > f.Until {
				continue
			}
			if want[k] == nil {
				want[k] = &store.Totals{}
			}
			want[k].Add(&r)
		}
		got := map[store.AggregateKey]*store.Totals{}
		lastDay := ""
		must(t, l.Usage(context.Background(), f, func(a store.Aggregate) error {
			if a.Day < lastDay {
				t.Errorf("%s: Test %d: aggregates out of day order", when, i)
			}
			lastDay = a.Day
			if got[a.AggregateKey] != nil {
				t.Errorf("%s: Test %d: aggregate %+v twice", when, i, a.AggregateKey)
			}
			tot := a.Totals
			got[a.AggregateKey] = &tot
			return nil
		}))
		if len(got) != len(want) {
			t.Errorf("%s: Test %d (%+v): %d aggregates, want %d", when, i, f, len(got), len(want))
		}
		for k, w := range want {
			if g := got[k]; g == nil || !reflect.DeepEqual(normalize(*g), normalize(*w)) {
				t.Errorf("%s: Test %d: aggregate %+v = %+v, want %+v", when, i, k, g, w)
			}
		}
	}
}

// normalize makes empty maps nil.
func normalize(t store.Totals) store.Totals {
	if len(t.Sources) == 0 {
		t.Sources = nil
	}
	if len(t.Outcomes) == 0 {
		t.Outcomes = nil
	}
	return t
}

// checkSpend checks that the spend counters equal the priced records' costs
// by subject, currency and period.
func checkSpend(t *testing.T, b store.Budgets, written []store.Record, when string) {
	t.Helper()
	want := map[store.Spend]int64{}
	for _, r := range written {
		if !r.Priced || r.Cost == 0 {
			continue
		}
		for _, s := range []store.Subject{{Scope: store.ScopeUser, ID: r.User}, {Scope: store.ScopeKey, ID: r.KeyID}} {
			for _, p := range []string{store.MonthOf(r.Time), store.PeriodTotal} {
				want[store.Spend{Subject: s, Currency: r.Currency, Period: p}] += r.Cost
			}
		}
	}
	got := map[store.Spend]int64{}
	must(t, b.Spend(context.Background(), func(s store.Spend) error {
		amt := s.Amount
		s.Amount = 0
		got[s] += amt
		return nil
	}))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: spend counters\n got %v\nwant %v", when, got, want)
	}
}

// RunIntents checks store.Intents: intents that a stopped instance left
// unresolved, and whose records are not in the ledger, are reported once
// after a restart; resolved, abandoned and recorded ones are not.
func RunIntents(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	rec := func(id string) store.Record {
		return store.Record{ID: id, Time: time.Now().UTC(), User: "alice", KeyID: "key_1", Model: "m", Outcome: "interrupted", Usage: store.Usage{Input: 10}}
	}
	for _, id := range []string{"lost-1", "resolved", "abandoned", "recorded", "lost-2"} {
		must(t, h.r.Intents.Add(rec(id)))
	}
	if left, err := h.r.Intents.Interrupted(ctx); err != nil || len(left) != 0 {
		t.Errorf("Interrupted on a fresh start = %v, %v; want none", left, err)
	}
	// Resolve is called once the record is durable.
	res := rec("resolved")
	res.Outcome = "ok"
	must(t, h.r.Ledger.Append(ctx, []store.Record{res}))
	h.r.Intents.Resolve([]string{"resolved"})
	h.r.Intents.Abandon("abandoned")
	done := rec("recorded")
	done.Outcome = "ok"
	must(t, h.r.Ledger.Append(ctx, []store.Record{done})) // settled, but its intent not resolved before the stop
	b.reopen(t, h)
	left, err := h.r.Intents.Interrupted(ctx)
	must(t, err)
	var ids []string
	for _, r := range left {
		ids = append(ids, r.ID)
		if r.User != "alice" || r.Usage.Input != 10 {
			t.Errorf("intent %s came back as %+v", r.ID, r)
		}
	}
	if fmt.Sprint(ids) != "[lost-1 lost-2]" {
		t.Errorf("Interrupted = %v, want [lost-1 lost-2]", ids)
	}
	if again, err := h.r.Intents.Interrupted(ctx); err != nil || len(again) != 0 {
		t.Errorf("a second Interrupted = %v, %v; want none", again, err)
	}
	must(t, h.r.Ledger.Append(ctx, left))
	h.r.Intents.Resolve(ids)
	b.reopen(t, h)
	if left, err := h.r.Intents.Interrupted(ctx); err != nil || len(left) != 0 {
		t.Errorf("Interrupted after settling = %v, %v; want none", left, err)
	}
}
