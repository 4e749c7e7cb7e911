package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/store"
)

// chargeAll charges recs through te and waits until they are counted.
func chargeAll(t *testing.T, te *testEngine, recs []Record) {
	t.Helper()
	for _, rec := range recs {
		if _, _, err := te.Charge(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	te.flush(t)
}

// reportRecords are two users' requests over two days, keys and models,
// one of them unpriced.
func reportRecords() []Record {
	return []Record{
		{ID: "a1", Time: day0, User: "alice", KeyID: "k1", Model: "claude-x", Usage: claudeUsage},
		{ID: "a2", Time: day0.AddDate(0, 0, 1), User: "alice", KeyID: "k2", Model: "claude-x", Usage: claudeUsage},
		{ID: "a3", Time: day0.AddDate(0, 0, 1), User: "alice", KeyID: "k2", Model: "mystery-model", Usage: claudeUsage},
		{ID: "b1", Time: day0, User: "bob", KeyID: "k3", Model: "claude-x", Usage: claudeUsage},
	}
}

func TestReportBy(t *testing.T) {
	te := newTestEngine(t)
	chargeAll(t, te, reportRecords())
	row := func(r ReportRow) string {
		return fmt.Sprintf("%s|%s|%s|%s|%s|%d", r.Day, r.Model, r.KeyID, r.User, r.Currency, r.Requests)
	}
	for i, tc := range []struct {
		f    ReportFilter
		want []string
	}{
		{ReportFilter{User: "alice", By: ByKey}, []string{"||k1||USD|1", "||k2|||1", "||k2||USD|1"}},
		{ReportFilter{User: "alice", By: ByModel}, []string{"|claude-x|||USD|2", "|mystery-model||||1"}},
		{ReportFilter{User: "alice", By: ByDayKey}, []string{day0.Format(dayLayout) + "||k1||USD|1", day0.AddDate(0, 0, 1).Format(dayLayout) + "||k2|||1",
			day0.AddDate(0, 0, 1).Format(dayLayout) + "||k2||USD|1"}},
		{ReportFilter{User: "alice", By: ByDay}, []string{"2025-03-10||||USD|1", "2025-03-11|||||1", "2025-03-11||||USD|1"}},
		{ReportFilter{By: ByUser}, []string{"|||alice||1", "|||alice|USD|2", "|||bob|USD|1"}},
	} {
		rep := report(t, te.Ledger(), tc.f)
		var got []string
		for _, r := range rep.Rows {
			got = append(got, row(r))
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("Test %d (by %s): rows %v, want %v", i, tc.f.By, got, tc.want)
		}
	}
	if _, err := te.Ledger().Report(context.Background(), ReportFilter{By: "week"}); err == nil {
		t.Error("an unknown grouping was accepted")
	}
}

// countingUsage is a store.Ledger that counts its reads of the
// aggregates.
type countingUsage struct {
	store.Ledger
	reads atomic.Int32
}

func (c *countingUsage) Usage(ctx context.Context, f store.UsageFilter, fn func(store.Aggregate) error) error {
	c.reads.Add(1)
	return c.Ledger.Usage(ctx, f, fn)
}

// TestReportsOneRead checks that Reports gives, for each grouping, the
// report that Report gives for it alone, from a single read of the
// aggregates (the console's usage page shows three).
func TestReportsOneRead(t *testing.T) {
	te := newTestEngine(t)
	chargeAll(t, te, reportRecords())
	bl, _ := backends.Load(te.Ledger())
	counted := &countingUsage{Ledger: bl.(store.Ledger)}
	l := NewLedger(counted, te.Ledger().intents, nil)
	t.Cleanup(func() { _ = l.Close() })
	by := []GroupBy{ByDayModel, ByKey, ByDayKey, ByUser}
	f := ReportFilter{Since: day0, Until: day0.AddDate(0, 0, 1)}
	reps, err := l.Reports(context.Background(), f, by...)
	if err != nil {
		t.Fatal(err)
	}
	if n := counted.reads.Load(); n != 1 {
		t.Errorf("Reports read the aggregates %d times, want once", n)
	}
	for i, g := range by {
		f.By = g
		want, err := json.Marshal(report(t, l, f))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(reps[i])
		if string(got) != string(want) {
			t.Errorf("by %q: Reports gave %s, Report %s", g, got, want)
		}
		if len(reps[i].Rows) == 0 {
			t.Errorf("by %q: no rows", g)
		}
	}
	if _, err := l.Reports(context.Background(), f, ByKey, "week"); err == nil {
		t.Error("an unknown grouping was accepted")
	}
}

// TestUnpricedJSON checks that unpriced usage has no zero cost and no
// blank currency in JSON: cost and currency are null, priced is false.
func TestUnpricedJSON(t *testing.T) {
	te := newTestEngine(t)
	chargeAll(t, te, []Record{
		{ID: "p", Time: day0, User: "u", KeyID: "k", Model: "claude-x", Usage: claudeUsage},
		{ID: "f", Time: day0, User: "u", KeyID: "k", Model: "mystery-model", Usage: claudeUsage},
	})
	b, err := json.Marshal(report(t, te.Ledger(), ReportFilter{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"rows.#(model==\"mystery-model\")", "totals.#(priced==false)"} {
		r := gjson.GetBytes(b, path)
		if !r.Exists() || r.Get("cost").Type != gjson.Null || r.Get("currency").Type != gjson.Null || r.Get("unpriced").Int() != 1 {
			t.Errorf("%s = %s; want cost and currency null, unpriced 1", path, r.Raw)
		}
	}
	if p := gjson.GetBytes(b, "rows.#(model==\"claude-x\")"); p.Get("cost").Str != "0.004500000" || p.Get("currency").Str != "USD" || !p.Get("priced").Bool() {
		t.Errorf("priced row %s", p.Raw)
	}
}

func TestUsers(t *testing.T) {
	te := newTestEngine(t)
	chargeAll(t, te, []Record{
		{ID: "a1", Time: day0, User: "alice", KeyID: "k1", Model: "claude-x", Usage: claudeUsage},
		{ID: "b1", Time: day0, User: "bob", KeyID: "k3", Model: "claude-x", Usage: claudeUsage},
		{ID: "b2", Time: day0, User: "bob", KeyID: "k3", Model: "claude-x", Usage: claudeUsage},
		{ID: "c1", Time: day0, User: "carol", KeyID: "k4", Model: "mystery-model", Usage: claudeUsage},
		{ID: "c2", Time: day0, User: "carol", KeyID: "k4", Model: "mystery-model", Usage: claudeUsage},
		{ID: "c3", Time: day0, User: "carol", KeyID: "k4", Model: "mystery-model", Usage: claudeUsage},
		// Another month does not count.
		{ID: "d1", Time: day0.AddDate(0, -1, 0), User: "dave", KeyID: "k5", Model: "claude-x", Usage: claudeUsage},
	})
	users, err := te.Ledger().Users(context.Background(), "2025-03")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range users {
		got = append(got, fmt.Sprintf("%s:%d:%d:%v", u.User, u.Requests, u.Unpriced, u.Spend))
	}
	want := "bob:2:0:[{USD 0.009000000}] alice:1:0:[{USD 0.004500000}] carol:3:3:[]"
	if strings.Join(got, " ") != want {
		t.Errorf("users %v, want %s", got, want)
	}
	if _, err := te.Ledger().Users(context.Background(), "March"); err == nil {
		t.Error("a bad month was accepted")
	}
}

func TestBudgetListAndKeyLimit(t *testing.T) {
	te := newTestEngine(t)
	ctx := context.Background()
	b := te.Budgets()
	if err := b.LimitKey(ctx, "key_z", "5.00"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"-1", "0", "five"} {
		if err := b.LimitKey(ctx, "key_bad", bad); err == nil {
			t.Errorf("LimitKey(%q) accepted", bad)
		}
	}
	if err := b.SetLimits(ctx, ScopeUser, "alice", Limits{Monthly: 10 * 1e9}); err != nil {
		t.Fatal(err)
	}
	list, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Scope != ScopeUser || list[0].ID != "alice" || list[1].ID != "key_z" ||
		list[1].Limits == nil || list[1].Limits.Total != 5*1e9 {
		t.Fatalf("budgets %+v", list)
	}
	// The key's limit is enforced like any budget: once spent, the next
	// request is refused.
	chargeAll(t, te, []Record{{ID: "z1", Time: day0, User: "zed", KeyID: "key_z", Model: "claude-x", Usage: Usage{Input: 2_000_000}}})
	if _, aerr := te.Admit(ctx, Subject{User: "zed", KeyID: "key_z"}, "claude-x", Usage{Input: 2_000_000}); code(aerr) != "insufficient_quota" {
		t.Errorf("a request over the key's limit: %v, want insufficient_quota", aerr)
	}
}

func TestUserRecordsAndCSV(t *testing.T) {
	te := newTestEngine(t)
	var recs []Record
	for i := 0; i < 7; i++ {
		model := "claude-x"
		if i == 3 {
			model = "mystery-model"
		}
		recs = append(recs, Record{ID: fmt.Sprintf("r%d", i), Time: day0, User: "alice", KeyID: "k1", Model: model, Usage: claudeUsage})
		recs = append(recs, Record{ID: fmt.Sprintf("b%d", i), Time: day0, User: "bob", KeyID: "k2", Model: model, Usage: claudeUsage})
	}
	chargeAll(t, te, recs)
	ctx := context.Background()
	var ids []string
	q := RecordQuery{User: "alice", Limit: 3}
	for pages := 0; ; pages++ {
		p, err := te.Ledger().UserRecords(ctx, q)
		if err != nil || pages > 5 {
			t.Fatal(err, pages)
		}
		for _, r := range p.Records {
			ids = append(ids, r.ID)
		}
		if !p.HasMore {
			break
		}
		q.After = p.Next
	}
	if strings.Join(ids, ",") != "r0,r1,r2,r3,r4,r5,r6" {
		t.Errorf("paged %v", ids)
	}
	if _, err := te.Ledger().UserRecords(ctx, RecordQuery{User: "alice", Limit: MaxPage + 1}); err == nil {
		t.Error("a page over the maximum was accepted")
	}
	var b strings.Builder
	if err := te.Ledger().ExportCSV(ctx, RecordQuery{User: "alice", Model: "mystery-model"}, &b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "id,time,") || !strings.HasPrefix(lines[1], "r3,") || !strings.Contains(lines[1], ",unpriced,unpriced,") {
		t.Errorf("CSV:\n%s", b.String())
	}
	b.Reset()
	_ = te.Ledger().ExportCSV(ctx, RecordQuery{User: "alice", Model: "claude-x"}, &b)
	if n := strings.Count(b.String(), "\n"); n != 7 || !strings.Contains(b.String(), ",0.004500000,USD,") {
		t.Errorf("CSV of claude-x: %d lines:\n%s", n, b.String())
	}
}
