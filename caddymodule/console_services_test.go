package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/console"
)

// startedApp starts an air app on a temporary Badger store.
func startedApp(t *testing.T) *App {
	t.Helper()
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	a := &App{StorageRaw: badgerJSON(t.TempDir())}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	return a
}

func TestConsoleServicesKeys(t *testing.T) {
	s := consoleServices{app: startedApp(t)}
	ctx := t.Context()
	_, k, err := s.Create(ctx, "bob", console.NewKey{Name: "ci", Models: []string{"gpt-4o", "claude-*"}, Limit: "5.00"})
	if err != nil {
		t.Fatal(err)
	}
	_, alices, err := s.Create(ctx, "alice", console.NewKey{Name: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "bob")
	if err != nil || len(list) != 1 || list[0].ID != k.ID || list[0].State != "active" || strings.Join(list[0].Models, ",") != "gpt-4o,claude-*" {
		t.Fatalf("bob's keys: %+v, %v", list, err)
	}
	// The key's spend limit is a budget of scope key.
	budgets, err := s.Budgets(ctx)
	if err != nil || len(budgets) != 1 || budgets[0].Scope != billing.ScopeKey || budgets[0].ID != k.ID || budgets[0].Limits.Total != 5_000_000_000 {
		t.Errorf("budgets after a limited key: %+v, %v", budgets, err)
	}
	for i, o := range []console.NewKey{{Models: []string{"gpt-["}}, {Limit: "lots"}, {Limit: "0"}} {
		if _, _, err := s.Create(ctx, "bob", o); !errors.Is(err, console.ErrInvalid) {
			t.Errorf("Test %d: creating %+v: %v, want an ErrInvalid", i, o, err)
		}
	}
	if err := s.Revoke(ctx, "bob", alices.ID); !errors.Is(err, console.ErrNotFound) {
		t.Errorf("bob revoking alice's key: %v", err)
	}
	if list, _ := s.List(ctx, "alice"); len(list) != 1 || list[0].State != "active" {
		t.Errorf("alice's key after bob's try: %+v", list)
	}
	if err := s.Revoke(ctx, "bob", k.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "bob"); len(list) != 1 || list[0].State != "revoked" {
		t.Errorf("bob's key after revoking: %+v", list)
	}
}

func TestConsoleServicesLedger(t *testing.T) {
	a := startedApp(t)
	s := consoleServices{app: a}
	ctx := t.Context()
	st := a.current()
	now := time.Now().UTC()
	// carol has no key: she only used the playground.
	for i := range 5 {
		rec := billing.Record{ID: fmt.Sprintf("req_%d", i), Time: now.Add(time.Duration(i-10) * time.Second), Endpoint: "chat", User: "carol",
			KeyID: consoleKeyID, Model: "m", Outcome: billing.OutcomeOK, Priced: true, Cost: 1000, Currency: "USD"}
		if i == 4 {
			rec.User, rec.KeyID = "dave", "key_d"
		}
		if _, err := st.ledger.Write(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	q := billing.RecordQuery{User: "carol", Limit: 3}
	p1, err := s.Records(ctx, q)
	if err != nil || len(p1.Records) != 3 || !p1.HasMore || p1.Records[0].ID != "req_0" {
		t.Fatalf("carol's first page: %+v, %v", p1, err)
	}
	q.After = p1.Next
	p2, err := s.Records(ctx, q)
	if err != nil || len(p2.Records) != 1 || p2.HasMore || p2.Records[0].ID != "req_3" {
		t.Fatalf("carol's second page: %+v, %v", p2, err)
	}
	q.After = "forged"
	if _, err := s.Records(ctx, q); !errors.Is(err, console.ErrInvalid) {
		t.Errorf("a forged cursor: %v", err)
	}
	var csv strings.Builder
	if err := s.ExportCSV(ctx, billing.RecordQuery{User: "carol"}, &csv); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(csv.String(), "\n"); lines != 5 || strings.Contains(csv.String(), "dave") {
		t.Errorf("carol's CSV has %d lines:\n%s", lines, csv.String())
	}
	reps, err := s.Reports(ctx, billing.ReportFilter{User: "carol"}, billing.ByKey, billing.ByUser)
	if err != nil || len(reps) != 2 {
		t.Fatalf("carol's reports: %+v, %v", reps, err)
	}
	if rep := reps[0]; len(rep.Rows) != 1 || rep.Rows[0].KeyID != consoleKeyID || rep.Rows[0].Requests != 4 {
		t.Errorf("carol's usage by key: %+v", rep)
	}
	if rep := reps[1]; len(rep.Rows) != 1 || rep.Rows[0].User != "carol" || rep.Rows[0].Requests != 4 {
		t.Errorf("carol's usage by user: %+v", rep)
	}
	// Limits of unknown users and keys, and in unknown currencies, would
	// limit nothing: refused.
	for i, tc := range []struct {
		scope billing.Scope
		id    string
		lim   billing.Limits
	}{
		{billing.ScopeUser, "erin", billing.Limits{RPM: 3}},
		{billing.ScopeKey, "key_nonexistent", billing.Limits{TPM: 3}},
		{billing.ScopeUser, "carol", billing.Limits{Currency: "XYZ", RPM: 3}},
		{billing.ScopeUser, "carol", billing.Limits{Total: 1}}, // no price file
	} {
		if err := s.SetBudget(ctx, tc.scope, tc.id, tc.lim); !errors.Is(err, console.ErrInvalid) {
			t.Errorf("Test %d: limits %+v of %s %s: %v, want an ErrInvalid", i, tc.lim, tc.scope, tc.id, err)
		}
	}
	_, erins, err := s.Create(ctx, "erin", console.NewKey{Name: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetBudget(ctx, billing.ScopeUser, "erin", billing.Limits{RPM: 3}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetBudget(ctx, billing.ScopeKey, erins.ID, billing.Limits{Monthly: -1}); !errors.Is(err, console.ErrInvalid) {
		t.Errorf("a negative monthly limit: %v, want an ErrInvalid", err)
	}
	if err := s.SetBudget(ctx, billing.ScopeKey, erins.ID, billing.Limits{TPM: 900}); err != nil {
		t.Fatal(err)
	}
	if b, _ := s.Budgets(ctx); len(b) != 2 || b[1].Scope != billing.ScopeKey || b[1].Limits.TPM != 900 {
		t.Errorf("budgets after a key's rate limit: %+v", b)
	}
	if err := s.DeleteBudget(ctx, billing.ScopeKey, erins.ID); err != nil {
		t.Fatal(err)
	}
	// The operators' search finds every user's records, or one key's
	// owner's; a forged cursor is the request's error.
	all, err := s.SearchRecords(ctx, billing.RecordQuery{Model: "m", Limit: 10})
	if err != nil || len(all.Records) != 5 || all.Records[4].User != "dave" || all.HasMore {
		t.Errorf("search across users: %+v, %v", all, err)
	}
	if _, err := s.SearchRecords(ctx, billing.RecordQuery{After: "forged!"}); !errors.Is(err, console.ErrInvalid) {
		t.Errorf("a forged search cursor: %v", err)
	}
	csv.Reset()
	if err := s.ExportRecordsCSV(ctx, billing.RecordQuery{Outcome: billing.OutcomeOK}, &csv); err != nil || strings.Count(csv.String(), "\n") != 6 {
		t.Errorf("CSV of every user's records: %v\n%s", err, csv.String())
	}
	users, err := s.Users(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range users {
		got = append(got, fmt.Sprintf("%s:%d:%v", u.User, u.Requests, u.Budget.Limits != nil))
	}
	// Top spenders first, then users with only limits or keys.
	if strings.Join(got, " ") != "carol:4:false dave:1:false erin:0:true" {
		t.Errorf("users: %s", strings.Join(got, " "))
	}
}

// TestConsoleProvidersHideSecrets: Operators → Providers shows a base URL
// without the credentials it may carry, as metrics and logs do.
func TestConsoleProvidersHideSecrets(t *testing.T) {
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	t.Cleanup(cancel)
	a := &App{
		StorageRaw: badgerJSON(t.TempDir()),
		Providers: []*ProviderConfig{{Name: "p", DialectRaw: dialectJSON("openai"),
			BaseURLs: []string{"https://user:hunter2@up.example/v1?api-key=sk-in-query#frag"}, APIKeys: []string{"sk-secret-1"}}},
	}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Stop() })
	views := consoleServices{app: a}.Providers()
	if len(views) != 1 || len(views[0].BaseURLs) != 1 || views[0].BaseURLs[0] != "https://up.example/v1" {
		t.Fatalf("providers: %+v", views)
	}
	if s := fmt.Sprintf("%+v", views); strings.Contains(s, "hunter2") || strings.Contains(s, "sk-in-query") || strings.Contains(s, "sk-secret") {
		t.Errorf("the providers' view holds a secret: %s", s)
	}
}
