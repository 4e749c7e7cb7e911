package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/tasks"
)

// fakeServices is an in-memory stand-in for the air app's services that
// records what the console asked of it.
type fakeServices struct {
	mu      sync.Mutex
	keys    []Key
	n       int
	filters []billing.ReportFilter
	queries []LedgerQuery
	tasks   []*tasks.Task
	budgets map[string]billing.Limits
	chats   []string
}

func newFake() *fakeServices {
	return &fakeServices{budgets: map[string]billing.Limits{}}
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

func (f *fakeServices) Create(_ context.Context, user, name string, exp *time.Time) (string, Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	k := Key{ID: fmt.Sprintf("key_%s_%d", user, f.n), User: user, Name: name, CreatedAt: time.Now(), ExpiresAt: exp}
	f.keys = append(f.keys, k)
	return fmt.Sprintf("sk-air-secret-%s-%d", user, f.n), k, nil
}

func (f *fakeServices) Revoke(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.keys {
		if f.keys[i].ID == id {
			now := time.Now()
			f.keys[i].RevokedAt = &now
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

func (f *fakeServices) Report(_ context.Context, flt billing.ReportFilter) (*billing.Report, error) {
	f.mu.Lock()
	f.filters = append(f.filters, flt)
	f.mu.Unlock()
	day := flt.Until.Format(dayLayout)
	row := billing.ReportRow{Day: day, Model: "model-of-" + flt.User, Currency: "USD"}
	row.Requests, row.Usage.Input, row.Usage.Output, row.Cost = 3, 120, 45, 1234567
	return &billing.Report{Rows: []billing.ReportRow{row}, Totals: []billing.ReportTotal{{Currency: "USD", Totals: row.Totals}}}, nil
}

func (f *fakeServices) Records(_ context.Context, q LedgerQuery) (LedgerPage, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	return LedgerPage{Records: []billing.Record{{ID: "req_of_" + q.User, User: q.User, Model: "m", Priced: true, Cost: 1234567, Currency: "USD"}}}, nil
}

// fakeTasks returns every task it holds, whoever owns it: the console must
// still show only the user's own.
type fakeTasks struct{ f *fakeServices }

func (t fakeTasks) List(_ context.Context, user string, limit int) ([]*tasks.Task, error) {
	return t.f.tasks, nil
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
	for _, u := range []string{"alice", "bob"} {
		s := UserSummary{User: u}
		if lim, ok := f.budgets[u]; ok {
			s.Budget.Limits = &lim
		}
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeServices) SetBudget(_ context.Context, user string, lim billing.Limits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.budgets[user] = lim
	return nil
}

func (f *fakeServices) DeleteBudget(_ context.Context, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.budgets, user)
	return nil
}

func (f *fakeServices) Prices() PriceView {
	return PriceView{Source: "prices.json", Currency: "USD", Text: "{}"}
}

func (f *fakeServices) Providers() []ProviderView {
	return []ProviderView{{Name: "mock", Protocol: "openai", BaseURLs: []string{"http://x"}, Models: []ModelView{{Pattern: "mock-gpt", Kind: "chat", Priced: true}}}}
}
