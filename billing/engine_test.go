package billing

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store/badger"
)

// claudeUsage costs 1000×3/1e6 + 100×15/1e6 = 0.0045 USD on claude-x.
var claudeUsage = Usage{Input: 1000, Output: 100}

const claudeCost Amount = 4_500_000

func code(e *apierror.Error) string {
	if e == nil || e.Code == nil {
		return ""
	}
	return *e.Code
}

func TestConcurrentAdmitStaysWithinBudget(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	// The budget allows 10.5 requests: 11 may start (each while spend plus
	// reservations are below the limit), the rest must be refused.
	limit := claudeCost*10 + claudeCost/2
	if err := te.Budgets().SetLimits(ctx, ScopeKey, "key_1", Limits{Monthly: limit}); err != nil {
		t.Fatal(err)
	}
	const n = 50
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		mu       sync.Mutex
		admitted int
		refused  []*apierror.Error
		settled  sync.WaitGroup
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, aerr := te.Admit(ctx, Subject{User: "alice", KeyID: "key_1"}, "claude-x", claudeUsage)
			mu.Lock()
			defer mu.Unlock()
			if aerr != nil {
				refused = append(refused, aerr)
				return
			}
			admitted++
			// Settle later, so that reservations overlap.
			settled.Add(1)
			go func() {
				defer settled.Done()
				<-start
				res.Settle(Record{ID: "req-" + string(rune('A'+i)), Endpoint: EndpointChat, Usage: claudeUsage, Outcome: OutcomeOK})
			}()
		}()
	}
	close(start)
	wg.Wait()
	settled.Wait()
	te.flush(t)

	if admitted != 11 || len(refused) != n-11 {
		t.Errorf("admitted %d and refused %d, want 11 and %d", admitted, len(refused), n-11)
	}
	for i, e := range refused {
		if e.Status != http.StatusTooManyRequests || e.Type != "insufficient_quota" || code(e) != "insufficient_quota" {
			t.Errorf("Test %d: refusal %d %s %s: %s", i, e.Status, e.Type, code(e), e.Message)
		}
	}
	if got := countRecords(t, te.Ledger()); got != admitted {
		t.Errorf("%d ledger records for %d admitted requests", got, admitted)
	}
	tot := totalIn(report(t, te.Ledger(), ReportFilter{KeyID: "key_1"}), "USD")
	if tot.Cost > limit+claudeCost || tot.Requests != int64(admitted) {
		t.Errorf("ledger total %s for %d requests, limit %s", tot.Cost, tot.Requests, limit)
	}
	st := te.Budgets().Status(ScopeKey, "key_1")
	if len(st.Spend) != 1 || st.Spend[0].Month != tot.Cost || st.Spend[0].Total != tot.Cost {
		t.Errorf("budget status %+v, ledger total %s", st, tot.Cost)
	}

	// A restarted process loads the same spend from the store and refuses.
	b2, err := NewBudgets(ctx, badger.NewBudgets(te.s))
	if err != nil {
		t.Fatal(err)
	}
	b2.Now = te.clock.Now
	if st2 := b2.Status(ScopeKey, "key_1"); st2.Spend[0].Month != tot.Cost || st2.Limits == nil || st2.Limits.Monthly != limit {
		t.Errorf("reloaded status %+v", st2)
	}
	e2 := NewEngine(te.Prices(), te.Ledger(), b2)
	if _, aerr := e2.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage); code(aerr) != "insufficient_quota" {
		t.Errorf("after restart: %v", aerr)
	}
	// Next month the monthly limit starts over.
	te.clock.Advance(31 * 24 * time.Hour)
	res, aerr := e2.Admit(ctx, Subject{KeyID: "key_1"}, "claude-x", claudeUsage)
	if aerr != nil {
		t.Fatalf("next month: %v", aerr)
	}
	res.Release()
}

func TestSpendLimits(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	b := te.Budgets()
	if err := b.SetLimits(ctx, ScopeUser, "alice", Limits{Total: claudeCost * 2}); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLimits(ctx, ScopeKey, "key_cny", Limits{Currency: "CNY", Monthly: 1}); err != nil {
		t.Fatal(err)
	}
	settle := func(s Subject, model, id string) *apierror.Error {
		res, aerr := te.Admit(ctx, s, model, claudeUsage)
		if aerr == nil {
			res.Settle(Record{ID: id, Usage: claudeUsage, Outcome: OutcomeOK})
		}
		return aerr
	}
	// The user's total limit holds across the user's keys.
	for i, tc := range []struct {
		s    Subject
		want string
	}{
		{Subject{User: "alice", KeyID: "key_a"}, ""},
		{Subject{User: "alice", KeyID: "key_b"}, ""},
		{Subject{User: "alice", KeyID: "key_c"}, "insufficient_quota"},
		{Subject{User: "bob", KeyID: "key_d"}, ""},
	} {
		if got := code(settle(tc.s, "claude-x", "u"+string(rune('0'+i)))); got != tc.want {
			t.Errorf("Test %d: %+v got %q, want %q", i, tc.s, got, tc.want)
		}
	}
	// A limit in CNY cannot count USD costs without a rate: the request
	// is refused rather than let through unbounded; CNY ones count.
	if got := code(settle(Subject{KeyID: "key_cny"}, "claude-x", "c1")); got != "budget_currency_unconvertible" {
		t.Errorf("USD request on a CNY limit without a rate: %q, want budget_currency_unconvertible", got)
	}
	if aerr := settle(Subject{KeyID: "key_cny"}, "qwen3-max", "c2"); aerr != nil {
		t.Errorf("first CNY request: %v", aerr)
	}
	if got := code(settle(Subject{KeyID: "key_cny"}, "qwen3-max", "c3")); got != "insufficient_quota" {
		t.Errorf("second CNY request: %q", got)
	}
	// Deleting the limit lifts it.
	if err := b.DeleteLimits(ctx, ScopeUser, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Limits(ScopeUser, "alice"); ok {
		t.Error("limits still set after DeleteLimits")
	}
	if aerr := settle(Subject{User: "alice", KeyID: "key_c"}, "claude-x", "u9"); aerr != nil {
		t.Errorf("after DeleteLimits: %v", aerr)
	}
	// Invalid limits are refused.
	if err := b.SetLimits(ctx, ScopeKey, "k", Limits{RPM: -1}); err == nil {
		t.Error("negative rpm accepted")
	}
	if err := b.SetLimits(ctx, Scope("org"), "k", Limits{}); err == nil {
		t.Error("unknown scope accepted")
	}
}

func TestRateLimits(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	b := te.Budgets()
	s := Subject{User: "alice", KeyID: "key_1"}
	if err := b.SetLimits(ctx, ScopeKey, "key_1", Limits{RPM: 2}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		res.Settle(Record{ID: "rpm" + string(rune('0'+i)), Usage: claudeUsage})
	}
	_, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
	if aerr == nil || aerr.Status != http.StatusTooManyRequests || aerr.Type != "rate_limit_error" || code(aerr) != "rate_limit_exceeded" {
		t.Fatalf("third request in a minute: %+v", aerr)
	}
	if aerr.RetryAfter != 30 { // one request refills every 30 s at 2 per minute
		t.Errorf("RetryAfter = %d, want 30", aerr.RetryAfter)
	}
	te.clock.Advance(29 * time.Second)
	if _, aerr := te.Admit(ctx, s, "claude-x", claudeUsage); aerr == nil || aerr.RetryAfter != 1 {
		t.Errorf("after 29 s: %+v", aerr)
	}
	te.clock.Advance(time.Second)
	res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
	if aerr != nil {
		t.Fatalf("after 30 s: %v", aerr)
	}
	// A request that never reached the upstream gives its slot back.
	res.Release()
	res.Release()
	res, aerr = te.Admit(ctx, s, "claude-x", claudeUsage)
	if aerr != nil {
		t.Fatalf("after Release: %v", aerr)
	}
	res.Settle(Record{ID: "rpm-late", Usage: claudeUsage})

	// A task charged later gives its cost back but keeps its slot.
	te.clock.Advance(time.Minute)
	for i := range 2 {
		res, aerr := te.AdmitTask(ctx, s, "claude-x", 1, 0)
		if aerr != nil {
			t.Fatalf("task %d: %v", i, aerr)
		}
		res.ReleaseCost()
	}
	if _, aerr := te.AdmitTask(ctx, s, "claude-x", 1, 0); code(aerr) != "rate_limit_exceeded" {
		t.Fatalf("third task in a minute: %+v", aerr)
	}

	// Tokens per minute: the estimate is reserved, then replaced by the
	// actual usage, which may overdraw the bucket.
	if err := b.SetLimits(ctx, ScopeUser, "bob", Limits{TPM: 1000}); err != nil {
		t.Fatal(err)
	}
	bob := Subject{User: "bob", KeyID: "key_b"}
	res, aerr = te.Admit(ctx, bob, "claude-x", Usage{Input: 600})
	if aerr != nil {
		t.Fatal(aerr)
	}
	res.Settle(Record{ID: "tpm1", Usage: Usage{Input: 600, Output: 300}})
	_, aerr = te.Admit(ctx, bob, "claude-x", Usage{Input: 200})
	if code(aerr) != "rate_limit_exceeded" || aerr.RetryAfter != 6 { // 100 left, 100 more refill in 6 s
		t.Fatalf("over TPM: %+v", aerr)
	}
	te.clock.Advance(6 * time.Second)
	if _, aerr := te.Admit(ctx, bob, "claude-x", Usage{Input: 200}); aerr != nil {
		t.Errorf("after refill: %v", aerr)
	}
}

func TestSettleOnceAndDuplicates(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	s := Subject{User: "alice", KeyID: "key_1"}

	// Settling one reservation twice writes one record.
	res, aerr := te.Admit(ctx, s, "claude-x", claudeUsage)
	if aerr != nil {
		t.Fatal(aerr)
	}
	rec := res.Settle(Record{ID: "once", Usage: claudeUsage, Outcome: OutcomeOK})
	if !rec.Priced || rec.Cost != claudeCost || rec.Tier != 0 || rec.Currency != "USD" || rec.Model != "claude-x" || rec.User != "alice" {
		t.Errorf("settled record %+v", rec)
	}
	if again := res.Settle(Record{ID: "other", Usage: claudeUsage}); again.ID != "once" {
		t.Errorf("second Settle returned %+v", again)
	}
	res.Release()

	// The synchronous path for tasks is idempotent by ID, in the ledger and
	// in the budget.
	task := Record{ID: "task-1", Endpoint: EndpointTasks, User: "alice", KeyID: "key_1", Model: "gpt-image-1",
		Images: 2, Source: SourceUnits, Outcome: OutcomeOK}
	got, fresh, err := te.Charge(ctx, task)
	if err != nil || !fresh || got.Cost != 80_000_000 || got.Tier != -1 {
		t.Fatalf("Charge = %+v, %v, %v", got, fresh, err)
	}
	if _, fresh, err := te.Charge(ctx, task); err != nil || fresh {
		t.Errorf("second Charge: fresh %v, %v", fresh, err)
	}
	res3, aerr := te.AdmitTask(ctx, s, "gpt-image-1", 2, 0)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if _, fresh, err := res3.Charge(ctx, task); err != nil || fresh {
		t.Errorf("reserved Charge of a known task: fresh %v, %v", fresh, err)
	}

	// An unpriced model is served and recorded as unpriced.
	res4, aerr := te.Admit(ctx, s, "mystery-model", claudeUsage)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if rec := res4.Settle(Record{ID: "free", Usage: claudeUsage}); rec.Priced || rec.Tier != -1 || rec.Cost != 0 {
		t.Errorf("unpriced record %+v", rec)
	}
	te.flush(t)

	if n := countRecords(t, te.Ledger()); n != 3 {
		t.Errorf("%d records, want 3", n)
	}
	rep := report(t, te.Ledger(), ReportFilter{User: "alice"})
	if usd := totalIn(rep, "USD"); usd.Requests != 2 || usd.Cost != claudeCost+80_000_000 || usd.Images != 2 {
		t.Errorf("USD totals %+v", usd)
	}
	if free := totalIn(rep, ""); free.Requests != 1 || free.Unpriced != 1 {
		t.Errorf("unpriced totals %+v", free)
	}
	st := te.Budgets().Status(ScopeKey, "key_1")
	if len(st.Spend) != 1 || st.Spend[0].Month != claudeCost+80_000_000 || st.Spend[0].Reserved != 0 {
		t.Errorf("budget counted duplicates: %+v", st)
	}
}

func TestReportRows(t *testing.T) {
	ctx := context.Background()
	te := newTestEngine(t)
	for i, tc := range []struct {
		day   int
		model string
	}{{0, "claude-x"}, {0, "claude-x"}, {0, "qwen3-max"}, {1, "claude-x"}, {3, "claude-x"}} {
		rec := Record{ID: "r" + string(rune('0'+i)), Time: day0.AddDate(0, 0, tc.day), User: "u", KeyID: "k", Model: tc.model, Usage: claudeUsage}
		if _, _, err := te.Charge(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	rep := report(t, te.Ledger(), ReportFilter{Since: day0, Until: day0.AddDate(0, 0, 1)})
	want := []struct {
		day, model, currency string
		requests             int64
	}{
		{"2025-03-10", "claude-x", "USD", 2},
		{"2025-03-10", "qwen3-max", "CNY", 1},
		{"2025-03-11", "claude-x", "USD", 1},
	}
	if len(rep.Rows) != len(want) {
		t.Fatalf("rows %+v", rep.Rows)
	}
	for i, w := range want {
		r := rep.Rows[i]
		if r.Day != w.day || r.Model != w.model || r.Currency != w.currency || r.Requests != w.requests {
			t.Errorf("Test %d: row %+v, want %+v", i, r, w)
		}
	}
	if len(rep.Totals) != 2 || rep.Totals[0].Currency != "CNY" || rep.Totals[1].Cost != 3*claudeCost {
		t.Errorf("totals %+v", rep.Totals)
	}
	if _, err := te.Ledger().Report(ctx, ReportFilter{Since: day0, Until: day0.AddDate(0, 0, -1)}); err == nil {
		t.Error("until before since accepted")
	}
}
