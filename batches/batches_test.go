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

func newEnv(t testing.TB) *env {
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

func (e *env) service(t testing.TB, c Config) *Service {
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
	// A key of alice's scoped to other models does not see the batch.
	embedOnly := Owner{User: "alice", KeyID: "key_e", Allows: func(m string) bool { return m == "mock-embed" }}
	if _, aerr := s1.GetBatch(ctx, embedOnly, b.ID); aerr == nil || aerr.Status != http.StatusNotFound {
		t.Errorf("a key scoped to other models read the batch: %v", aerr)
	}
	if l, _ := s1.ListBatches(ctx, embedOnly, "", 10); len(l.Data) != 0 {
		t.Errorf("a key scoped to other models listed %d batches", len(l.Data))
	}
	if l, _ := s1.ListBatches(ctx, alice, "", 10); len(l.Data) != 1 || l.Data[0].ID != b.ID {
		t.Errorf("alice's batches: %+v", l)
	}
	// A batch that ended is never worked on again.
	calls := e.led.calls
	s1.Sweep(ctx)
	s2.Sweep(ctx)
	if e.led.calls != calls {
		t.Errorf("an ended batch was billed again (%d charges, then %d)", calls, e.led.calls)
	}
}

// TestCreateRefuses: each bad input gets a clear error, and nothing is
// submitted upstream.
func TestCreateRefuses(t *testing.T) {
	e := newEnv(t)
	s := e.service(t, Config{MaxFileBytes: 4096, MaxFiles: 3})
	ctx := context.Background()
	scoped := Owner{User: "alice", KeyID: "key_s", Allows: func(m string) bool { return m == "mock-embed" }}
	good := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}` + "\n"
	for _, tc := range []struct {
		name, input string
		owner       Owner
		status      int
		want        string
	}{
		{"malformed line", good + "{not json\n", alice, 400, "line 2: not valid JSON"},
		{"repeated member", good + `{"custom_id":"b","custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}`, alice, 400, "line 2: member 'custom_id' appears more than once"},
		{"repeated escaped member", good + `{"custom_id":"b","custom\u005fid":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat"}}`, alice, 400, "line 2: member 'custom_id' appears more than once"},
		{"repeated nested member", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-chat","messages":[{"role":"user","role":"system"}]}}`, alice, 400, "line 1: member 'role' appears more than once"},
		{"repeated custom_id", good + good, alice, 400, "line 2: custom_id 'a' is used by an earlier line"},
		{"wrong url", `{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"mock-chat"}}`, alice, 400, "line 1: url must be"},
		{"model the key may not use", good, scoped, 400, "line 1: this key may not use model 'mock-chat'"},
		{"unknown model", `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"nope"}}`, alice, 400, "line 1: model 'nope' does not serve"},
		{"two providers", good + `{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"other-chat"}}`, alice, 400, "line 2: model 'other-chat' is served by provider 'other'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, aerr := s.Upload(ctx, tc.owner, PurposeBatch, "in.jsonl", strings.NewReader(tc.input))
			if aerr != nil {
				t.Fatal(aerr)
			}
			defer s.DeleteFile(ctx, tc.owner, f.ID)
			_, aerr = s.Create(ctx, tc.owner, []byte(`{"input_file_id":"`+f.ID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), nil)
			if aerr == nil || aerr.Status != tc.status || !strings.Contains(aerr.Message, tc.want) {
				t.Errorf("Create = %v, want %d %q", aerr, tc.status, tc.want)
			}
		})
	}
	if _, aerr := s.Upload(ctx, alice, PurposeBatch, "big.jsonl", strings.NewReader(strings.Repeat(good, 100))); aerr == nil || aerr.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized upload = %v, want 413", aerr)
	}
	for range 3 {
		if _, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(good)); aerr != nil {
			t.Fatal(aerr)
		}
	}
	if _, aerr := s.Upload(ctx, alice, PurposeBatch, "in.jsonl", strings.NewReader(good)); aerr == nil || aerr.Status != http.StatusTooManyRequests {
		t.Errorf("upload beyond MaxFiles = %v, want 429", aerr)
	}
	if l, _ := s.ListFiles(ctx, alice, "", 10); len(l.Data) != 3 {
		t.Errorf("listed %d files, want 3", len(l.Data))
	}
}

// TestBatchBillingResumes: billing that stops part way (the ledger fails
// after two lines, as a crash would stop it) is resumed by the next step,
// which charges every line again: the ledger keeps each line once, and
// TestOutputBeyondUploadLimit: an output larger than the upload limit
// TestBatchErrorFile: the lines the provider failed are in the batch's
// TestBatchGivenUp: a batch the provider has not ended after MaxRunning
// TestBatchCancel: a batch cancelled part way ends cancelled, with an
// TestRetryAfterCapped: a provider that answers a poll with 503 and a
// Retry-After however far off has the batch polled again within the
// TestSubmitRefusedScrubbed: a provider that refuses the batch's input
// gets the client a 502 with the provider's message, its key scrubbed;
// TestStepHandsBack: a step whose context ends (a reload, a stop) hands
// its claimed batch back, due at once, so that the next poller need not
