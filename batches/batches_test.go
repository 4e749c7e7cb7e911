package batches

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/mockprovider"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// ledger is a Biller that keeps each record once by id, as the ledger does.
type ledger struct {
	mu    sync.Mutex
	recs  map[string]billing.Record
	calls int
}

func (l *ledger) Charge(_ context.Context, rec billing.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if _, ok := l.recs[rec.ID]; !ok {
		l.recs[rec.ID] = rec
	}
	return nil
}

// env is a service on a Badger store and the mock provider.
type env struct {
	repos store.Repos
	table *providers.Table
	led   *ledger
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := httptest.NewServer(mockprovider.New(mockprovider.Config{APIKey: "sk-up"}))
	t.Cleanup(srv.Close)
	repos, err := badger.OpenRepos(badger.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repos.Close() })
	p := &providers.Provider{Name: "mock", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{srv.URL + "/v1"}, APIKeys: []string{"sk-up"}}
	other := &providers.Provider{Name: "other", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{srv.URL + "/v1"}, APIKeys: []string{"sk-up"}}
	table, err := providers.NewTable([]*providers.Provider{p, other}, []*providers.Route{
		{Pattern: "mock-chat", Kind: providers.KindChat, Provider: p, UpstreamModel: "up-chat"},
		{Pattern: "mock-embed", Kind: providers.KindEmbedding, Provider: p},
		{Pattern: "other-chat", Kind: providers.KindChat, Provider: other},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{repos: repos, table: table, led: &ledger{recs: map[string]billing.Record{}}}
}

func (e *env) service(t *testing.T, c Config) *Service {
	t.Helper()
	c.Files, c.Batches, c.Media, c.Routes, c.Biller = e.repos.Files, e.repos.Batches, e.repos.Media, e.table, e.led
	c.PollInterval = 50 * time.Millisecond
	s, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var alice = Owner{User: "alice", KeyID: "key_a"}

func chatLines(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"custom_id":"req-` + string(rune('a'+i)) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat","messages":[{"role":"user","content":"hi"}],"max_tokens":20}}` + "\n")
	}
	return b.String()
}

// TestBatchBilledOncePerLine runs a batch through two services on one
// store: it completes, its output is re-hosted as a file of the user's
// with a line per request, and each line is on the ledger once, at the
// batch service tier, under the batch's id and the line's custom_id.
func TestBatchBilledOncePerLine(t *testing.T) {
	e := newEnv(t)
	s1, s2 := e.service(t, Config{}), e.service(t, Config{})
	ctx := context.Background()
	f, aerr := s1.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(chatLines(3)))
	if aerr != nil {
		t.Fatal(aerr)
	}
	var estimate billing.Usage
	b, aerr := s1.Create(ctx, alice, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`),
		func(model string, u billing.Usage) (holds.Hold, error) { estimate = u; return nil, nil })
	if aerr != nil {
		t.Fatal(aerr)
	}
	if b.RequestCounts.Total != 3 || estimate.Output != 60 || estimate.Input <= 0 {
		t.Errorf("created %+v with estimate %+v; want 3 requests, 60 output tokens reserved", b.RequestCounts, estimate)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var wg sync.WaitGroup
		for _, s := range []*Service{s1, s2} {
			wg.Go(func() { s.Sweep(ctx) })
		}
		wg.Wait()
		got, aerr := s2.GetBatch(ctx, alice, b.ID)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if got.Status == StatusCompleted {
			b = got
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch still %s", got.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if b.OutputFileID == nil || b.CompletedAt == nil {
		t.Fatalf("completed batch without output file or time: %+v", b)
	}
	m, aerr := s1.OpenFile(ctx, alice, *b.OutputFileID)
	if aerr != nil {
		t.Fatal(aerr)
	}
	out, _ := io.ReadAll(m.Content)
	m.Content.Close()
	if n := strings.Count(string(out), "\n"); n != 3 {
		t.Errorf("output has %d lines, want 3:\n%s", n, out)
	}
	if _, aerr := s1.OpenFile(ctx, Owner{User: "bob"}, *b.OutputFileID); aerr == nil || aerr.Status != http.StatusNotFound {
		t.Errorf("another user opened the output: %v", aerr)
	}
	if len(e.led.recs) != 3 {
		t.Fatalf("ledger has %d records, want 3: %v", len(e.led.recs), e.led.recs)
	}
	for _, cid := range []string{"req-a", "req-b", "req-c"} {
		rec, ok := e.led.recs[b.ID+"/"+cid]
		if !ok {
			t.Errorf("no record for line %s", cid)
			continue
		}
		if rec.ServiceTier != ServiceTier || rec.Model != "mock-chat" || rec.User != "alice" || rec.KeyID != "key_a" ||
			rec.Usage.Output != 7 || rec.Usage.Input <= 0 || rec.Endpoint != EndpointBatch {
			t.Errorf("record %s = %+v", cid, rec)
		}
	}
	// A batch that ended is never worked on again.
	calls := e.led.calls
	s1.Sweep(ctx)
	s2.Sweep(ctx)
	if e.led.calls != calls {
		t.Errorf("an ended batch was billed again (%d charges, then %d)", calls, e.led.calls)
	}
}
