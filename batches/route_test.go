package batches

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/mockprovider"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store/badger"
)

// countingMock is a mock provider that counts batch creates and polls,
// and answers 503 to every create when down is set.
type countingMock struct {
	h              http.Handler
	down           bool
	creates, polls atomic.Int32
}

func (m *countingMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/batches":
		m.creates.Add(1)
		if m.down {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/batches/"):
		m.polls.Add(1)
	}
	m.h.ServeHTTP(w, r)
}

// TestBatchFallsBack: the model's provider answers 503 to the batch's
// create, so the batch goes to the model's fallback on another provider,
// once; it is polled there only, and its lines are billed at the
// fallback's price.
func TestBatchFallsBack(t *testing.T) {
	first := &countingMock{h: mockprovider.New(mockprovider.Config{APIKey: "sk-1"}), down: true}
	second := &countingMock{h: mockprovider.New(mockprovider.Config{APIKey: "sk-2"})}
	s1, s2 := httptest.NewServer(first), httptest.NewServer(second)
	t.Cleanup(s1.Close)
	t.Cleanup(s2.Close)
	p1 := &providers.Provider{Name: "p1", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{s1.URL + "/v1"}, APIKeys: []string{"sk-1"}}
	p2 := &providers.Provider{Name: "p2", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{s2.URL + "/v1"}, APIKeys: []string{"sk-2"}}
	table, err := providers.NewTable([]*providers.Provider{p1, p2}, []*providers.Route{
		{Pattern: "mock-chat", Kind: providers.KindChat, Provider: p1, UpstreamModel: "up-chat", Fallbacks: []string{"backup"}},
		{Pattern: "backup", Kind: providers.KindChat, Provider: p2, UpstreamModel: "up-backup"},
	})
	if err != nil {
		t.Fatal(err)
	}
	repos, err := badger.OpenRepos(badger.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repos.Close() })
	e := &env{repos: repos, table: table, led: &ledger{recs: map[string]billing.Record{}}}
	s := e.service(t, Config{})
	ctx := context.Background()
	f, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(2)))
	if aerr != nil {
		t.Fatal(aerr)
	}
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatalf("create: %v", aerr)
	}
	if c1, c2 := first.creates.Load(), second.creates.Load(); c1 != 1 || c2 != 1 {
		t.Fatalf("creates: %d on the first provider, %d on the second; want 1 and 1", c1, c2)
	}
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCompleted })
	if first.polls.Load() != 0 || second.polls.Load() == 0 {
		t.Errorf("polls: %d on the first provider, %d on the second; want none and some", first.polls.Load(), second.polls.Load())
	}
	pt, err := billing.ParsePrices("t", []byte(`{"currency":"USD","models":{
		"mock-chat":{"tiers":[{"input":"1","output":"1"}],"service_tiers":{"batch":"0.5"}},
		"backup":{"tiers":[{"input":"3","output":"3"}],"service_tiers":{"batch":"0.5"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(e.led.recs) != 2 {
		t.Fatalf("ledger has %d records, want 2", len(e.led.recs))
	}
	for id, rec := range e.led.recs {
		if rec.Model != "mock-chat" || rec.ServedModel != "backup" || rec.Provider != "p2" || !strings.HasPrefix(id, b.ID+"/") {
			t.Errorf("record %s = model %q served %q provider %q deployment %q", id, rec.Model, rec.ServedModel, rec.Provider, rec.Deployment)
		}
		want := billing.Usage{Input: rec.Usage.Input, Output: rec.Usage.Output}
		if rec.Usage.Input <= 0 {
			t.Errorf("record %s has no input usage", id)
		}
		// 3 per million tokens, halved for the batch tier.
		q := pt.QuoteRecord(&rec)
		wantCost := pt.QuoteRecord(&billing.Record{Model: "backup", Usage: want, Outcome: billing.OutcomeOK, ServiceTier: ServiceTier})
		cheap := pt.QuoteRecord(&billing.Record{Model: "mock-chat", Usage: want, Outcome: billing.OutcomeOK, ServiceTier: ServiceTier})
		if q.Cost.String() != wantCost.Cost.String() || q.Cost.String() == cheap.Cost.String() {
			t.Errorf("record %s costs %s, want the fallback's %s (not the model's %s)", id, q.Cost, wantCost.Cost, cheap.Cost)
		}
	}
}

// TestBatchKeepsItsDeployment: a model with two deployments, the first
// failing its creates and the second limited to its provider's second
// key (the first key is refused there): the batch goes to the second
// deployment with its model renamed, and is polled, downloaded and
// billed there with that key.
func TestBatchKeepsItsDeployment(t *testing.T) {
	first := &countingMock{h: mockprovider.New(mockprovider.Config{APIKey: "sk-1"}), down: true}
	second := &countingMock{h: mockprovider.New(mockprovider.Config{APIKey: "sk-2"})}
	s1, s2 := httptest.NewServer(first), httptest.NewServer(second)
	t.Cleanup(s1.Close)
	t.Cleanup(s2.Close)
	// retries 1: a request may make two attempts on the model.
	p1 := &providers.Provider{Name: "p1", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{s1.URL + "/v1"}, APIKeys: []string{"sk-1"}, Retries: 1}
	p2 := &providers.Provider{Name: "p2", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{s2.URL + "/v1"}, APIKeys: []string{"sk-refused", "sk-2"}, Retries: 1}
	table, err := providers.NewTable([]*providers.Provider{p1, p2}, []*providers.Route{
		{Pattern: "mock-chat", Kind: providers.KindChat, Deployments: []*providers.Deployment{
			{Provider: p1, UpstreamModel: "up-chat"}, {Provider: p2, UpstreamModel: "up-two", Keys: []int{1}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	repos, err := badger.OpenRepos(badger.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repos.Close() })
	e := &env{repos: repos, table: table, led: &ledger{recs: map[string]billing.Record{}}}
	s := e.service(t, Config{})
	ctx := context.Background()
	f, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(2)))
	if aerr != nil {
		t.Fatal(aerr)
	}
	b, aerr := s.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
	if aerr != nil {
		t.Fatalf("create: %v", aerr)
	}
	if c1, c2 := first.creates.Load(), second.creates.Load(); c1 > 1 || c2 != 1 {
		t.Fatalf("creates: %d on the first deployment, %d on the second; want at most 1 and 1", c1, c2)
	}
	b = sweepUntil(t, s, b.ID, func(b *Batch) bool { return b.Status == StatusCompleted })
	if first.polls.Load() != 0 || second.polls.Load() == 0 || b.OutputFileID == nil {
		t.Errorf("polls: %d on the first deployment, %d on the second; output %v", first.polls.Load(), second.polls.Load(), b.OutputFileID)
	}
	if len(e.led.recs) != 2 {
		t.Fatalf("ledger has %d records, want 2", len(e.led.recs))
	}
	for id, rec := range e.led.recs {
		if rec.Model != "mock-chat" || rec.ServedModel != "" || rec.Provider != "p2" || rec.Deployment != "p2/up-two" || rec.Usage.Output == 0 {
			t.Errorf("record %s = %+v", id, rec)
		}
	}
}
