package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/tasks"
)

// fakeServices is an in-memory stand-in for the air app's services that
// records what the console asked of it.
type fakeServices struct {
	mu      sync.Mutex
	keys    []Key
	n       int
	filters []billing.ReportFilter
	// reportCalls counts the calls of Reports.
	reportCalls int
	queries     []billing.RecordQuery
	exports     []billing.RecordQuery
	created     []NewKey
	tasks       []*tasks.Task
	budgets     map[string]billing.Limits
	chats       []string
	// searches are the operators' ledger searches.
	searches []billing.RecordQuery
	// refusals are the refused requests.
	refusals *refusals.Log
}

func newFake() *fakeServices {
	return &fakeServices{budgets: map[string]billing.Limits{}, refusals: refusals.New(10)}
}

func (f *fakeServices) services() Services {
	return Services{Keys: f, Usage: f, Tasks: fakeTasks{f}, Playground: f, Operators: f}
}

func (f *fakeServices) List(_ context.Context, user string) ([]Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Key
	for _, k := range f.keys {
		if k.User == user {
			out = append(out, k)
		}
	}
	return out, nil
}

func (f *fakeServices) Create(_ context.Context, user string, o NewKey) (string, Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o.Limit == "-1" {
		return "", Key{}, Invalid(errors.New("limit: must be more than zero"))
	}
	f.created = append(f.created, o)
	f.n++
	k := Key{ID: fmt.Sprintf("key_%s_%d", user, f.n), User: user, Name: o.Name, CreatedAt: time.Now(), ExpiresAt: o.ExpiresAt,
		Models: o.Models, State: "active"}
	f.keys = append(f.keys, k)
	return fmt.Sprintf("sk-air-secret-%s-%d", user, f.n), k, nil
}

// Revoke revokes user's key id, as keys.Service.RevokeOwn does.
func (f *fakeServices) Revoke(_ context.Context, user, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.keys {
		if f.keys[i].ID == id && f.keys[i].User == user {
			now := time.Now()
			f.keys[i].RevokedAt, f.keys[i].State = &now, "revoked"
			return nil
		}
	}
	return ErrNotFound
}

func (f *fakeServices) revoked(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.keys {
		if k.ID == id {
			return k.RevokedAt != nil
		}
	}
	return false
}

// Reports records each grouping's filter in filters, and the call in
// reportCalls.
func (f *fakeServices) Reports(_ context.Context, flt billing.ReportFilter, by ...billing.GroupBy) ([]*billing.Report, error) {
	f.mu.Lock()
	f.reportCalls++
	f.mu.Unlock()
	reps := make([]*billing.Report, len(by))
	for i, g := range by {
		flt.By = g
		reps[i] = f.report(flt)
	}
	return reps, nil
}

// report is the fake report for flt.
func (f *fakeServices) report(flt billing.ReportFilter) *billing.Report {
	f.mu.Lock()
	f.filters = append(f.filters, flt)
	f.mu.Unlock()
	day := flt.Until.Format(dayLayout)
	row := billing.ReportRow{Day: day, Model: "model-of-" + flt.User, Currency: "USD", Priced: true}
	switch flt.By {
	case billing.ByKey:
		row = billing.ReportRow{KeyID: "key-of-" + flt.User, Currency: "USD", Priced: true}
	case billing.ByDayKey:
		row = billing.ReportRow{Day: day, KeyID: "key-of-" + flt.User, Currency: "USD", Priced: true}
	case billing.ByDay:
		row = billing.ReportRow{Day: day, Currency: "USD", Priced: true}
	case billing.ByUser:
		// Nine users, u1 spending the most.
		rep := &billing.Report{}
		for i := 1; i <= 9; i++ {
			rep.Rows = append(rep.Rows, billing.ReportRow{User: fmt.Sprintf("u%d", i), Currency: "USD", Priced: true,
				Totals: billing.Totals{Requests: 1, Cost: billing.Amount(1000 - i)}})
		}
		return rep
	}
	row.Requests, row.Usage.Input, row.Usage.Output, row.Cost = 3, 120, 45, 1234567
	return &billing.Report{Rows: []billing.ReportRow{row}, Totals: []billing.ReportTotal{{Currency: "USD", Totals: row.Totals}}}
}

// Records returns one record of q.User per page; the cursor "c1" is the
// second and last page, any other cursor is bad.
func (f *fakeServices) Records(_ context.Context, q billing.RecordQuery) (*billing.RecordPage, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	rec := billing.Record{ID: "req_of_" + q.User, User: q.User, Model: "m", Priced: true, Cost: 1234567, Currency: "USD",
		Unpriced: []string{"web_search", "audio_input"}, Status: 200, DurationMillis: 1834}
	switch q.After {
	case "":
		return &billing.RecordPage{Records: []billing.Record{rec}, HasMore: true, Next: "c1"}, nil
	case "c1":
		rec.ID += "_2"
		rec.DurationMillis = 0 // not measured
		return &billing.RecordPage{Records: []billing.Record{rec}}, nil
	}
	return nil, Invalid(errors.New("bad cursor"))
}

func (f *fakeServices) ExportCSV(_ context.Context, q billing.RecordQuery, w io.Writer) error {
	f.mu.Lock()
	f.exports = append(f.exports, q)
	f.mu.Unlock()
	_, err := io.WriteString(w, "id,user\nreq_of_"+q.User+","+q.User+"\n")
	return err
}

// fakeTasks pages every task it holds, whoever owns it, two at a time:
// the console must still show only the user's own.
type fakeTasks struct{ f *fakeServices }

func (t fakeTasks) List(_ context.Context, user, after string, limit int) (*tasks.Page, error) {
	all := t.f.tasks
	if after != "" {
		i := slices.IndexFunc(all, func(t *tasks.Task) bool { return t.ID == after && t.User == user })
		if i < 0 {
			return nil, Invalid(errors.New("after: no such task"))
		}
		all = all[i+1:]
	}
	n := min(len(all), 2)
	return &tasks.Page{Tasks: all[:n], HasMore: len(all) > n}, nil
}

func (f *fakeServices) Models() []string { return []string{"mock-gpt"} }

func (f *fakeServices) Chat(w http.ResponseWriter, r *http.Request, user string, body []byte) (*Settled, error) {
	f.mu.Lock()
	f.chats = append(f.chats, user+" "+string(body))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n")
	return &Settled{RequestID: "req_1", Model: "mock-gpt", Priced: true, Cost: 42, Currency: "USD"}, nil
}

func (f *fakeServices) Users(context.Context) ([]UserSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []UserSummary
	for _, u := range []string{"alice", "bob", "carol"} {
		s := UserSummary{User: u, Requests: 7, Spend: []billing.CurrencyAmount{{Currency: "USD", Amount: 2500000}}}
		if lim, ok := f.budgets[u]; ok {
			s.Budget.Limits = &lim
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeServices) Budgets(context.Context) ([]billing.BudgetEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []billing.BudgetEntry{{Scope: billing.ScopeKey, ID: "key_limited", BudgetStatus: billing.BudgetStatus{Limits: &billing.Limits{Total: 5000000000}}}}
	for id, lim := range f.budgets {
		e := billing.BudgetEntry{Scope: billing.ScopeUser, ID: id, BudgetStatus: billing.BudgetStatus{Limits: &lim}}
		if k, ok := strings.CutPrefix(id, "key:"); ok {
			e.Scope, e.ID = billing.ScopeKey, k
		}
		out = append(out, e)
	}
	return out, nil
}

// budgetID is the fake's name of a user's or key's limits: a user's
// name, or "key:" and a key's id.
func budgetID(scope billing.Scope, id string) string {
	if scope == billing.ScopeKey {
		return "key:" + id
	}
	return id
}

func (f *fakeServices) SetBudget(_ context.Context, scope billing.Scope, id string, lim billing.Limits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if lim.Currency == "XXX" {
		return Invalid(errors.New("currency XXX is not in the price table"))
	}
	f.budgets[budgetID(scope, id)] = lim
	return nil
}

func (f *fakeServices) DeleteBudget(_ context.Context, scope billing.Scope, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.budgets, budgetID(scope, id))
	return nil
}

// SearchRecords returns one record of q.User (or of "alice" and "bob"
// without a user) per page; the cursor "s1" is the second and last page.
func (f *fakeServices) SearchRecords(_ context.Context, q billing.RecordQuery) (*billing.RecordPage, error) {
	f.mu.Lock()
	f.searches = append(f.searches, q)
	f.mu.Unlock()
	users := []string{"alice", "bob"}
	if q.User != "" {
		users = []string{q.User, q.User}
	}
	rec := billing.Record{ID: "req_search_" + users[0], User: users[0], Model: "m", Outcome: "ok", Priced: true, Cost: 1234567, Currency: "USD",
		Status: 502, DurationMillis: 640}
	switch q.After {
	case "":
		return &billing.RecordPage{Records: []billing.Record{rec}, HasMore: true, Next: "s1"}, nil
	case "s1":
		rec.ID, rec.User = "req_search_"+users[1]+"_2", users[1]
		return &billing.RecordPage{Records: []billing.Record{rec}}, nil
	}
	return nil, Invalid(errors.New("bad cursor"))
}

func (f *fakeServices) ExportRecordsCSV(_ context.Context, q billing.RecordQuery, w io.Writer) error {
	f.mu.Lock()
	f.exports = append(f.exports, q)
	f.mu.Unlock()
	_, err := io.WriteString(w, "id,user\nreq_search_alice,alice\nreq_search_bob,bob\n")
	return err
}

func (f *fakeServices) Prices() PriceView {
	return PriceView{Source: "prices.json", Currency: "USD", Text: "{}", Models: []billing.ModelPrices{
		{Pattern: "mock-gpt", Currency: "USD", Tiers: []billing.TierPrices{{UpTo: 32000, Input: "2.5", Output: "10"}, {Input: "5", Output: "20"}},
			Cache: billing.CachePrices{Creation: "1.25", Creation1h: "2", Read: "0.1"}, ServiceTiers: map[string]string{"flex": "0.5"},
			Charges: &billing.ChargePrices{AudioInput: "40", Tools: map[string]string{"web_search": "0.01"}}},
		{Pattern: "mock-image", Currency: "USD", Task: "image", TaskPrice: "0.04"},
	}}
}

func (f *fakeServices) Providers() []ProviderView {
	return []ProviderView{{Name: "mock", Protocol: "openai", BaseURLs: []string{"http://x"}, Models: []ModelView{{Pattern: "mock-gpt", Kind: "chat", Priced: true}},
		Upstreams: []routing.UpstreamStatus{
			{Provider: "mock", Deployment: "mock/gpt", BaseURL: "http://x", Breaker: "closed", Available: true, Attempts: 4, Failures: 1},
			{Provider: "mock", Deployment: "mock/gpt", BaseURL: "http://y", Key: 1, Breaker: "open", Reason: "breaker_open", Attempts: 5, Failures: 5},
		}}}
}

func (f *fakeServices) Budget(_ context.Context, user string) (billing.BudgetStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := billing.BudgetStatus{Month: "2026-11"}
	if lim, ok := f.budgets[budgetID(billing.ScopeUser, user)]; ok {
		st.Limits = &lim
	}
	return st, nil
}

func (f *fakeServices) AllKeys(context.Context) ([]Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.keys), nil
}

func (f *fakeServices) CreateKeyFor(ctx context.Context, user string, o NewKey) (string, Key, error) {
	return f.Create(ctx, user, o)
}

func (f *fakeServices) UpdateKey(_ context.Context, id string, e KeyEdit) (Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if slices.Contains(e.Models, "bad[") {
		return Key{}, Invalid(errors.New("models: bad glob"))
	}
	for i := range f.keys {
		if f.keys[i].ID == id {
			f.keys[i].Name, f.keys[i].Models, f.keys[i].ExpiresAt = e.Name, e.Models, e.ExpiresAt
			return f.keys[i], nil
		}
	}
	return Key{}, ErrNotFound
}

func (f *fakeServices) Refused(user string, limit int) []refusals.Entry {
	return f.refusals.List(refusals.Filter{User: user, Limit: limit})
}

func (f *fakeServices) Refusals(flt refusals.Filter) []refusals.Entry { return f.refusals.List(flt) }

func (f *fakeServices) RevokeKey(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.keys {
		if f.keys[i].ID == id {
			now := time.Now()
			f.keys[i].RevokedAt, f.keys[i].State = &now, "revoked"
			return nil
		}
	}
	return ErrNotFound
}
