package responses

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/internal/fakeclock"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// ledger is a Biller that keeps the first record of each id, as the real
// ledger does, and counts the writes.
type ledger struct {
	mu      sync.Mutex
	records map[string]billing.Record
	writes  int
	fail    error
}

func (l *ledger) Charge(_ context.Context, rec billing.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.writes++
	if _, ok := l.records[rec.ID]; !ok {
		l.records[rec.ID] = rec
	}
	return nil
}

func (l *ledger) snapshot() (map[string]billing.Record, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]billing.Record, len(l.records))
	for k, v := range l.records {
		out[k] = v
	}
	return out, l.writes
}

type routes map[string]*providers.Provider

func (r routes) Provider(name string) *providers.Provider { return r[name] }

// fakeUpstream is a fake provider that answers a retrieval with body, or
// status when it is not 200.
type fakeUpstream struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   string
	polls  int
	auth   []string
	hang   chan struct{} // when set, a retrieval waits until it closes
}

func (u *fakeUpstream) set(status int, body string) {
	u.mu.Lock()
	u.status, u.body = status, body
	u.mu.Unlock()
}

func (u *fakeUpstream) count() int { u.mu.Lock(); defer u.mu.Unlock(); return u.polls }

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.polls++
	u.auth = append(u.auth, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	status, body, hang := u.status, u.body, u.hang
	for k, v := range u.header {
		w.Header()[k] = v
	}
	u.mu.Unlock()
	if hang != nil {
		select {
		case <-hang:
		case <-r.Context().Done():
			return
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

type env struct {
	t      *testing.T
	clock  *fakeclock.Clock
	store  store.Responses
	ledger *ledger
	up     *fakeUpstream
	routes routes
	poller *Poller
}

const respID = "resp_bg1"

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	up := &fakeUpstream{status: http.StatusOK, body: `{"id":"resp_bg1","object":"response","status":"queued"}`}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)
	e := &env{t: t, clock: fakeclock.New(time.Now().UTC().Truncate(time.Second)), store: badger.NewResponses(db),
		ledger: &ledger{records: map[string]billing.Record{}}, up: up,
		routes: routes{"openai": {Name: "openai", BaseURLs: []string{srv.URL + "/v1"}, APIKeys: []string{"sk-a", "sk-b"}}}}
	e.poller, err = NewPoller(Config{Store: e.store, Routes: e.routes, Biller: e.ledger, Now: e.clock.Now,
		PollInterval: 5 * time.Second, MaxPollInterval: time.Minute, MaxAge: 24 * time.Hour, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// ref registers a pending background response created now, as the create
// handler does.
func (e *env) register() Ref {
	e.t.Helper()
	ref := Ref{User: "alice", KeyID: "k1", Provider: "openai", BaseURL: e.routes["openai"].BaseURLs[0], Key: 1,
		Model: "gpt-5", Record: "req_create", Created: e.clock.Now(), Unbilled: true}
	if err := e.store.PutPending(context.Background(), respID, ref.Encode(), TTL, e.poller.FirstPoll(e.clock.Now())); err != nil {
		e.t.Fatal(err)
	}
	return ref
}

// stored returns the mapping as stored now.
func (e *env) stored() Ref {
	e.t.Helper()
	b, err := e.store.Get(context.Background(), respID)
	if err != nil {
		e.t.Fatal(err)
	}
	ref, err := Decode(b)
	if err != nil {
		e.t.Fatal(err)
	}
	return ref
}

// pending reports whether the response is still claimable at some time.
func (e *env) pending() bool {
	got, err := e.store.ClaimDue(context.Background(), e.clock.Now().Add(48*time.Hour), time.Second, 10)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range got {
		if _, err := e.store.Reschedule(context.Background(), p.ID, e.clock.Now()); err != nil {
			e.t.Fatal(err)
		}
	}
	return len(got) > 0
}

const completed = `{"id":"resp_bg1","object":"response","status":"completed","service_tier":"flex",
	"usage":{"input_tokens":100,"input_tokens_details":{"cached_tokens":20},"output_tokens":50,"output_tokens_details":{"reasoning_tokens":10},"total_tokens":150}}`

func TestPollerBillsOnceWhenFinished(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ref := e.register()
	e.poller.Sweep(ctx)
	if n := e.up.count(); n != 0 {
		t.Fatalf("polled %d times before the first poll interval", n)
	}
	e.clock.Advance(5 * time.Second)
	e.poller.Sweep(ctx)
	e.up.set(http.StatusOK, `{"id":"resp_bg1","status":"in_progress"}`)
	e.clock.Advance(5 * time.Second)
	e.poller.Sweep(ctx)
	if recs, _ := e.ledger.snapshot(); len(recs) != 0 || e.up.count() != 2 {
		t.Fatalf("after 2 polls of a running response: %d records, %d polls; want 0 and 2", len(recs), e.up.count())
	}
	e.up.set(http.StatusOK, completed)
	e.clock.Advance(5 * time.Second)
	e.poller.Sweep(ctx)
	recs, writes := e.ledger.snapshot()
	rec, ok := recs["req_create"]
	if !ok || len(recs) != 1 || writes != 1 {
		t.Fatalf("records %v (%d writes), want one under the create's id", recs, writes)
	}
	want := billing.Usage{Input: 80, CacheRead: 20, Output: 50, Reasoning: 10}
	if rec.Usage != want || rec.Outcome != billing.OutcomeOK || rec.ServiceTier != "flex" || !rec.Time.Equal(ref.Created) ||
		rec.User != "alice" || rec.KeyID != "k1" || rec.Model != "gpt-5" || rec.Endpoint != billing.EndpointResponses {
		t.Errorf("record = %+v", rec)
	}
	if e.stored().Unbilled || e.pending() {
		t.Error("the mapping is still unbilled or pending after billing")
	}
	if got := e.up.auth[0]; got != "GET /v1/responses/resp_bg1 Bearer sk-b" {
		t.Errorf("retrieval = %q, want a GET with the key that created the response", got)
	}
	// Nothing more happens later.
	e.clock.Advance(time.Hour)
	e.poller.Sweep(ctx)
	if _, w := e.ledger.snapshot(); w != 1 || e.up.count() != 3 {
		t.Errorf("after billing: %d writes, %d polls; want 1 and 3", w, e.up.count())
	}
}

func TestPollerOutcomes(t *testing.T) {
	for i, tc := range []struct {
		status int
		body   string
		age    time.Duration
		want   string
		usage  billing.Usage
	}{
		{200, `{"status":"failed","usage":{"input_tokens":7,"output_tokens":0}}`, time.Minute, billing.OutcomeUpstreamError, billing.Usage{Input: 7}},
		{200, `{"status":"cancelled","usage":null}`, time.Minute, billing.OutcomeCanceled, billing.Usage{}},
		{200, `{"status":"incomplete","usage":{"input_tokens":3,"output_tokens":4}}`, time.Minute, billing.OutcomeOK, billing.Usage{Input: 3, Output: 4}},
		{404, `{"error":{"message":"not found"}}`, time.Minute, OutcomeUnfinished, billing.Usage{}},
		{200, `{"status":"in_progress"}`, 24 * time.Hour, OutcomeUnfinished, billing.Usage{}},
		{503, `{"error":{}}`, 24*time.Hour + time.Minute, OutcomeUnfinished, billing.Usage{}},
	} {
		e := newEnv(t)
		e.register()
		e.up.set(tc.status, tc.body)
		e.clock.Advance(tc.age)
		e.poller.Sweep(context.Background())
		recs, writes := e.ledger.snapshot()
		rec := recs["req_create"]
		if writes != 1 || rec.Outcome != tc.want || rec.Usage != tc.usage {
			t.Errorf("Test %d: %d writes, record %+v; want outcome %s, usage %+v", i, writes, rec, tc.want, tc.usage)
		}
		if e.pending() {
			t.Errorf("Test %d: still pending after billing", i)
		}
	}
}

func TestPollerBacksOff(t *testing.T) {
	e := newEnv(t)
	for i, tc := range []struct{ age, want time.Duration }{
		{0, 5 * time.Second},
		{20 * time.Second, 5 * time.Second},
		{2 * time.Minute, 15 * time.Second},
		{time.Hour, time.Minute},
	} {
		if got := e.poller.interval(tc.age); got != tc.want {
			t.Errorf("Test %d: interval at age %s = %s, want %s", i, tc.age, got, tc.want)
		}
	}
	// A running response of age 2 min is polled again 15 s later, not
	// before; an upstream's Retry-After pushes the next poll further.
	ctx := context.Background()
	e.register()
	e.up.set(http.StatusOK, `{"status":"in_progress"}`)
	e.clock.Advance(2 * time.Minute)
	e.poller.Sweep(ctx)
	e.clock.Advance(15*time.Second - time.Millisecond)
	e.poller.Sweep(ctx)
	if n := e.up.count(); n != 1 {
		t.Fatalf("%d polls before the backoff ended, want 1", n)
	}
	e.clock.Advance(time.Millisecond)
	e.up.mu.Lock()
	e.up.status, e.up.header = http.StatusTooManyRequests, http.Header{"Retry-After": {"120"}}
	e.up.mu.Unlock()
	e.poller.Sweep(ctx)
	e.clock.Advance(119 * time.Second)
	e.poller.Sweep(ctx)
	if n := e.up.count(); n != 2 {
		t.Fatalf("%d polls before Retry-After passed, want 2", n)
	}
	e.clock.Advance(time.Second)
	e.poller.Sweep(ctx)
	if n := e.up.count(); n != 3 {
		t.Errorf("%d polls once Retry-After passed, want 3", n)
	}
	if _, w := e.ledger.snapshot(); w != 0 {
		t.Errorf("%d writes for a running response, want none", w)
	}
}

func TestRetrievalFirstThenPoller(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ref := e.register()
	// The client retrieves the finished response through the gateway,
	// which bills it (as caddymodule does) ...
	e.clock.Advance(2 * time.Second)
	if err := Settle(ctx, e.store, e.ledger, respID, ref, ref.Finish("completed", billing.Usage{Input: 1, Output: 2}, true, ""), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	// ... and the poller, later, has nothing left to do.
	e.clock.Advance(time.Minute)
	e.poller.Sweep(ctx)
	if _, w := e.ledger.snapshot(); w != 1 || e.up.count() != 0 {
		t.Errorf("%d writes, %d polls after a retrieval billed the response; want 1 and 0", w, e.up.count())
	}
	// A poller that had claimed the response before the retrieval billed
	// it settles it again under the same id: the ledger keeps one record.
	if err := Settle(ctx, e.store, e.ledger, respID, ref, ref.Finish("completed", billing.Usage{Input: 1, Output: 2}, true, ""), e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if recs, _ := e.ledger.snapshot(); len(recs) != 1 || recs["req_create"].Usage.Output != 2 {
		t.Errorf("records = %v, want one", recs)
	}
}

func TestPollerRetriesWhatItCannotFinish(t *testing.T) {
	ctx := context.Background()
	t.Run("ledger down", func(t *testing.T) {
		e := newEnv(t)
		e.register()
		e.up.set(http.StatusOK, completed)
		e.ledger.fail = context.DeadlineExceeded
		e.clock.Advance(5 * time.Second)
		e.poller.Sweep(ctx)
		if !e.pending() || !e.stored().Unbilled {
			t.Fatal("a response the ledger did not take is no longer pending")
		}
		e.ledger.fail = nil
		e.clock.Advance(5 * time.Second)
		e.poller.Sweep(ctx)
		if recs, _ := e.ledger.snapshot(); len(recs) != 1 {
			t.Errorf("%d records once the ledger is back, want 1", len(recs))
		}
	})
	t.Run("provider removed", func(t *testing.T) {
		e := newEnv(t)
		e.register()
		delete(e.routes, "openai")
		e.clock.Advance(5 * time.Second)
		e.poller.Sweep(ctx)
		if _, w := e.ledger.snapshot(); w != 0 || !e.pending() {
			t.Errorf("a response whose provider is gone: %d writes, pending %v; want it kept pending", w, e.pending())
		}
	})
	t.Run("shutdown mid-poll", func(t *testing.T) {
		e := newEnv(t)
		e.register()
		e.up.hang = make(chan struct{})
		defer close(e.up.hang)
		e.clock.Advance(5 * time.Second)
		sctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { e.poller.Sweep(sctx); close(done) }()
		for e.up.count() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
		<-done
		// Handed back: claimable at once, not after the lease.
		got, err := e.store.ClaimDue(ctx, e.clock.Now(), time.Minute, 10)
		if err != nil || len(got) != 1 {
			t.Errorf("after a shutdown, ClaimDue = %d responses (%v), want the one handed back", len(got), err)
		}
	})
}

func TestNewPollerRefusesAShortLease(t *testing.T) {
	_, err := NewPoller(Config{Store: badger.NewResponses(nil), Routes: routes{}, Biller: &ledger{}, Lease: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "lease") {
		t.Errorf("NewPoller with a 10 s lease = %v, want an error about the lease", err)
	}
}

func TestSettleIfFinished(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ref := e.register()
	if ok, err := e.poller.SettleIfFinished(ctx, respID, ref); ok || err != nil {
		t.Fatalf("SettleIfFinished(queued) = %v, %v; want false", ok, err)
	}
	if _, w := e.ledger.snapshot(); w != 0 || !e.pending() {
		t.Fatalf("a queued response was billed (%d writes) or is no longer pending", w)
	}
	e.up.set(http.StatusOK, completed)
	if ok, err := e.poller.SettleIfFinished(ctx, respID, ref); !ok || err != nil {
		t.Fatalf("SettleIfFinished(completed) = %v, %v; want true", ok, err)
	}
	if recs, w := e.ledger.snapshot(); w != 1 || recs["req_create"].Usage.Output != 50 || e.pending() || e.stored().Unbilled {
		t.Errorf("after SettleIfFinished: %d writes, records %v, pending %v", w, recs, e.pending())
	}
}

// TestPollerRetryAfterCapped checks that a provider's Retry-After, however
// far off, puts a background response's next poll off by an hour at most
// and never past its max age: the response is still billed when it ends,
// or recorded unfinished at its max age, instead of never being polled
// again.
func TestPollerRetryAfterCapped(t *testing.T) {
	for _, tc := range []struct {
		name, retryAfter string
		maxAge, next     time.Duration
	}{
		{"31 years", "999999999", 24 * time.Hour, time.Hour},
		{"past a Duration", "99999999999999", 24 * time.Hour, time.Hour},
		{"a far date", "Fri, 31 Dec 9999 23:59:59 GMT", 24 * time.Hour, time.Hour},
		{"beyond the max age", "3000", 30 * time.Minute, 30*time.Minute - 5*time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.poller.c.MaxAge = tc.maxAge
			ctx := context.Background()
			e.register()
			e.up.mu.Lock()
			e.up.status, e.up.body, e.up.header = http.StatusTooManyRequests, `{"error":{}}`, http.Header{"Retry-After": {tc.retryAfter}}
			e.up.mu.Unlock()
			e.clock.Advance(5 * time.Second)
			e.poller.Sweep(ctx)
			e.up.mu.Lock()
			e.up.status, e.up.header = http.StatusOK, nil
			e.up.mu.Unlock()
			e.up.set(http.StatusOK, completed)
			e.clock.Advance(tc.next - time.Millisecond)
			e.poller.Sweep(ctx)
			if n := e.up.count(); n != 1 {
				t.Fatalf("%d polls before the capped Retry-After passed, want 1", n)
			}
			e.clock.Advance(time.Millisecond)
			e.poller.Sweep(ctx)
			if n := e.up.count(); n != 2 {
				t.Fatalf("%d polls once the capped Retry-After passed, want 2", n)
			}
			if recs, _ := e.ledger.snapshot(); len(recs) != 1 {
				t.Errorf("%d records once the response finished, want 1", len(recs))
			}
		})
	}
}
