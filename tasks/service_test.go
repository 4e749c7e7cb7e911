package tasks

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"

	"github.com/caddy-air/caddy-air/internal/fakeclock"
)

// imageEnv is an OpenAI upstream that answers every image request with one
// base64 PNG.
func imageEnv(t *testing.T) *env {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "gpt-image-1", Kind: providers.KindImage})
	b64 := base64.StdEncoding.EncodeToString(pngBytes)
	e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"created":1,"data":[{"b64_json":"`+b64+`"}]}`)
	})
	return e
}

func createImage(t *testing.T, s *Service, o Owner, prompt string) *Task {
	t.Helper()
	tk, aerr := s.Create(context.Background(), o, []byte(`{"model":"gpt-image-1","prompt":"`+prompt+`"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if tk.Status != StatusSucceeded {
		t.Fatalf("image task %s: %s", tk.Status, tk.Error)
	}
	return tk
}

func TestListOrderLimitAndIsolation(t *testing.T) {
	e := imageEnv(t)
	clock := fakeclock.New(time.Now())
	s := e.service(func(c *Config) { c.Clock = clock.Now })
	ctx := context.Background()
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, createImage(t, s, alice, "a").ID)
		clock.Advance(time.Millisecond)
	}
	bobs := createImage(t, s, bob, "b")

	for i, c := range []struct {
		owner Owner
		limit int
		want  []string
	}{
		{alice, 20, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{alice, 2, []string{ids[4], ids[3]}},
		{alice, 100, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{bob, 20, []string{bobs.ID}},
		{Owner{User: "carol"}, 20, nil},
		{Owner{User: "alic"}, 20, nil},
	} {
		got, aerr := s.List(ctx, c.owner, c.limit)
		if aerr != nil {
			t.Fatalf("Test %d: %v", i, aerr)
		}
		var gotIDs []string
		for _, tk := range got {
			gotIDs = append(gotIDs, tk.ID)
		}
		if strings.Join(gotIDs, ",") != strings.Join(c.want, ",") {
			t.Errorf("Test %d: list = %v, want %v", i, gotIDs, c.want)
		}
	}
	for _, bad := range []int{0, -1, 101} {
		if _, aerr := s.List(ctx, alice, bad); aerr == nil || aerr.Status != 400 {
			t.Errorf("limit %d accepted", bad)
		}
	}

	// List items carry progress and completed_at but no output.
	got, _ := s.List(ctx, alice, 1)
	v, _ := json.Marshal(NewListView(got, false))
	if gjson.GetBytes(v, "object").String() != "list" || gjson.GetBytes(v, "data.0.progress").Int() != 100 ||
		!gjson.GetBytes(v, "data.0.completed_at").Exists() || gjson.GetBytes(v, "data.0.output").Exists() {
		t.Errorf("list view %s", v)
	}
	if ca := gjson.GetBytes(v, "data.0.created_at").String(); len(ca) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(ca, "Z") {
		t.Errorf("created_at %q is not ISO 8601 UTC with milliseconds", ca)
	}
}

func TestNotFoundIsIndistinguishable(t *testing.T) {
	e := imageEnv(t)
	s := e.service(nil)
	ctx := context.Background()
	tk := createImage(t, s, alice, "a")
	if _, aerr := s.Get(ctx, alice, tk.ID); aerr != nil {
		t.Fatalf("owner cannot read own task: %v", aerr)
	}
	other, otherErr := s.Get(ctx, bob, tk.ID)
	_, unknownErr := s.Get(ctx, bob, "task_"+strings.Repeat("a", 26))
	if other != nil || otherErr == nil || unknownErr == nil {
		t.Fatal("another user's task was readable")
	}
	if otherErr.Status != 404 || *otherErr.Code != "task_not_found" || unknownErr.Status != 404 || *unknownErr.Code != "task_not_found" {
		t.Errorf("errors %+v / %+v, want 404 task_not_found", otherErr, unknownErr)
	}
	if strings.ReplaceAll(otherErr.Message, tk.ID, "ID") != strings.ReplaceAll(unknownErr.Message, "task_"+strings.Repeat("a", 26), "ID") {
		t.Errorf("messages differ: %q vs %q", otherErr.Message, unknownErr.Message)
	}
}

func TestGetStormDoesNotPollUpstream(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":10}`)
	s := e.service(nil)
	ctx := context.Background()
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	for i := 0; i < 100; i++ {
		if got, aerr := s.Get(ctx, alice, tk.ID); aerr != nil || got.Status != StatusRunning {
			t.Fatalf("get %d: %v %+v", i, aerr, got)
		}
	}
	if n := e.count("GET", "/v1/videos/"); n != 0 {
		t.Fatalf("100 GETs caused %d upstream polls", n)
	}
	// The poller, not the client, reaches the upstream.
	e.run(s)
	waitFor(t, "the poller to poll", func() bool { return e.count("GET", "/v1/videos/") > 0 })
}

func TestTwoPollersBillOnce(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":10}`)
	s1 := e.service(nil)
	s2 := e.service(nil)
	e.run(s1)
	e.run(s2)
	ctx := context.Background()
	tk, aerr := s1.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"x","seconds":"4"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	waitFor(t, "a few polls", func() bool { return e.count("GET", "/v1/videos/video_123") >= 4 })
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"4"}`)
	waitStatus(t, s2, alice, tk.ID, StatusSucceeded)
	waitBilled(t, s1, tk.ID)
	waitFor(t, "running index to empty", func() bool { return runningCount(t, e) == 0 })
	if got := e.biller.charges(); len(got) != 1 || got[0].VideoSeconds != 4 {
		t.Errorf("charges = %+v, want exactly one", got)
	}
	if n := e.count("GET", "/v1/videos/video_123/content"); n != 1 {
		t.Errorf("video downloaded %d times, want once", n)
	}
}

func TestConcurrentFinishEndsOnce(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan", Kind: providers.KindVideo})
	f := &fakeDashScope{}
	f.install(e)
	f.setScript(dsRunning)
	services := []*Service{e.service(nil), e.service(nil)}
	ctx := context.Background()
	tk, aerr := services[0].Create(ctx, alice, []byte(`{"model":"wan","prompt":"x"}`), testMediaBase)
	if aerr != nil || tk.Status != StatusRunning {
		t.Fatalf("create: %v %+v", aerr, tk)
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := services[i%2]
			if i%3 == 0 {
				s.fail(ctx, tk, errUpstream, "racer")
				return
			}
			out := &outcome{state: StatusSucceeded, video: &mediaRef{url: "https://x/v.mp4", keep: true}, seconds: 5}
			if _, err := s.finish(ctx, tk, out, &call{client: http.DefaultClient}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final, err := services[1].load(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	charges := len(e.biller.charges())
	switch final.Status {
	case StatusSucceeded:
		if charges != 1 || final.Billing != BillingDone {
			t.Errorf("succeeded task charged %d times (billing %q), want once", charges, final.Billing)
		}
	case StatusFailed:
		if charges != 0 || final.Output != nil {
			t.Errorf("failed task charged %d times, output %+v", charges, final.Output)
		}
	default:
		t.Errorf("status %q after the race", final.Status)
	}
}

func TestRestartResumesRunningTask(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	f.set(`{"id":"video_123","object":"video","status":"in_progress","progress":20}`)
	s1 := e.service(nil)
	stop := e.run(s1)
	ctx := context.Background()
	tk, aerr := s1.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	waitFor(t, "progress 20", func() bool {
		got, _ := s1.Get(ctx, alice, tk.ID)
		return got.Progress == 20
	})
	stop()
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"12"}`)

	s2 := e.service(nil)
	e.run(s2)
	done := waitStatus(t, s2, alice, tk.ID, StatusSucceeded)
	if done.Output == nil || !strings.HasPrefix(done.Output.VideoURL, testMediaBase) {
		t.Fatalf("output %+v", done.Output)
	}
	waitBilled(t, s2, tk.ID)
	if got := e.biller.charges(); len(got) != 1 || got[0].VideoSeconds != 12 {
		t.Errorf("charges %+v", got)
	}
}

func TestRestartRetriesPendingCharge(t *testing.T) {
	e := newEnv(t, providers.ProtocolDashScope, &providers.Route{Pattern: "wan", Kind: providers.KindVideo})
	f := &fakeDashScope{}
	f.install(e)
	f.setScript(`{"request_id":"r","output":{"task_id":"ds-task-1","task_status":"SUCCEEDED","video_url":"https://x/v.mp4"},"usage":{"video_duration":5}}`)
	e.biller.setFailing(true)
	s1 := e.service(nil)
	stop := e.run(s1)
	ctx := context.Background()
	tk, aerr := s1.Create(ctx, alice, []byte(`{"model":"wan","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	waitStatus(t, s1, alice, tk.ID, StatusSucceeded)
	stop()
	if got, _ := s1.load(ctx, tk.ID); got.Billing != BillingPending {
		t.Fatalf("billing %q with a failing biller, want pending", got.Billing)
	}

	e.biller.setFailing(false)
	s2 := e.service(nil)
	e.run(s2)
	waitBilled(t, s2, tk.ID)
	if got := e.biller.charges(); len(got) != 1 || got[0].TaskID != tk.ID || got[0].VideoSeconds != 5 {
		t.Errorf("charges %+v, want one", got)
	}
}

func TestInterruptedTaskFails(t *testing.T) {
	e := imageEnv(t)
	s := e.service(nil)
	ctx := context.Background()
	// A create that crashed after storing the task but before the upstream
	// accepted it: running, no upstream id, claim expired.
	now := time.Now().UTC()
	tk := &Task{ID: "task_crashed", User: "alice", Model: "gpt-image-1", Type: providers.KindImage, Status: StatusRunning,
		CreatedAt: now, Provider: "up", Protocol: providers.ProtocolOpenAI, NextPollAt: now}
	if err := s.insert(ctx, tk); err != nil {
		t.Fatal(err)
	}
	e.run(s)
	got := waitStatus(t, s, alice, tk.ID, StatusFailed)
	if !strings.HasPrefix(got.Error, "UpstreamError: ") {
		t.Errorf("error %q", got.Error)
	}
	if len(e.biller.charges()) != 0 || e.count("POST", "/") != 0 {
		t.Error("an interrupted task was billed or resubmitted")
	}
}

func TestBackoffAndRetryAfter(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	var mu sync.Mutex
	answers := []func(w http.ResponseWriter){
		func(w http.ResponseWriter) { writeJSON(w, 500, `{"error":{"message":"boom"}}`) },
		func(w http.ResponseWriter) { writeJSON(w, 502, `bad gateway`) },
		func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			writeJSON(w, 429, `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`)
		},
		func(w http.ResponseWriter) {
			writeJSON(w, 200, `{"id":"video_123","object":"video","status":"in_progress","progress":50}`)
		},
	}
	polls := 0
	e.mux.HandleFunc("GET /v1/videos/video_x", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		answers[min(polls, len(answers)-1)](w)
		polls++
	})
	clock := fakeclock.New(time.Now())
	const interval = time.Second
	s := e.service(func(c *Config) {
		c.Clock = clock.Now
		c.PollInterval = interval
		c.MaxBackoff = time.Minute
		c.Lease = 7 * time.Minute
	})
	ctx := context.Background()
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"x"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	// Point the task at the scripted job.
	if _, _, err := s.update(ctx, tk.ID, func(t *Task, _ time.Time) bool { t.UpstreamID = "video_x"; return true }); err != nil {
		t.Fatal(err)
	}
	e.run(s)
	for i, c := range []struct {
		advance  time.Duration
		wantWait time.Duration
		failures int
	}{
		{interval, interval, 1},          // 500: first backoff step
		{interval, 2 * interval, 2},      // 502: doubled
		{2 * interval, 30 * interval, 3}, // 429 Retry-After: 30 beats the 4 s backoff
		{30 * interval, interval, 0},     // success: back to the normal interval
	} {
		clock.Advance(c.advance)
		var got *Task
		waitFor(t, "poll", func() bool {
			// Count first: once the poll happened, the claim before it is
			// visible, so the task read below is at least that recent.
			mu.Lock()
			n := polls
			mu.Unlock()
			var err error
			got, err = s.load(ctx, tk.ID)
			if err != nil {
				t.Fatal(err)
			}
			// Wait until the poll's outcome replaced the claim.
			return n == i+1 && got.NextPollAt.Sub(clock.Now()) != s.lease
		})
		if wait := got.NextPollAt.Sub(clock.Now()); wait != c.wantWait || got.Failures != c.failures {
			t.Errorf("Test %d: next poll in %v after %d failures, want %v after %d", i, wait, got.Failures, c.wantWait, c.failures)
		}
		if got.Status != StatusRunning {
			t.Fatalf("Test %d: transient errors ended the task: %s", i, got.Error)
		}
	}
}

func TestExpiry(t *testing.T) {
	e := imageEnv(t)
	s := e.service(func(c *Config) { c.TTL = 2 * time.Second; c.MediaTTL = 2 * time.Second })
	ctx := context.Background()
	tk := createImage(t, s, alice, "a")
	id := mediaID(t, tk.Output.ImageURL)
	if _, _, err := readMedia(s, id); err != nil {
		t.Fatalf("fresh media: %v", err)
	}
	if _, aerr := s.Get(ctx, alice, tk.ID); aerr != nil {
		t.Fatalf("fresh task: %v", aerr)
	}
	waitFor(t, "task and media to expire", func() bool {
		_, aerr := s.Get(ctx, alice, tk.ID)
		_, _, err := readMedia(s, id)
		return aerr != nil && errors.Is(err, store.ErrNotFound)
	})
	if _, aerr := s.Get(ctx, alice, tk.ID); aerr.Status != 404 || *aerr.Code != "task_not_found" {
		t.Errorf("expired task: %+v", aerr)
	}
	waitFor(t, "the list to forget it", func() bool {
		l, _ := s.List(ctx, alice, 20)
		return len(l) == 0
	})
	if _, _, err := readMedia(s, "../t/"+tk.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a malformed media id reached the store: %v", err)
	}
}

// TestListPages checks cursor paging: pages of any size walk every task
// of the user once, newest first, past the 100 of one page, and has_more
// is false on the last page only.
func TestListPages(t *testing.T) {
	e := imageEnv(t)
	clock := fakeclock.New(time.Now())
	s := e.service(func(c *Config) { c.Clock = clock.Now })
	ctx := context.Background()
	var ids []string
	for i := 0; i < 105; i++ {
		ids = append([]string{createImage(t, s, alice, "a").ID}, ids...) // newest first
		clock.Advance(time.Millisecond)
	}
	createImage(t, s, bob, "b")
	for _, limit := range []int{100, 7} {
		var got []string
		after, pages := "", 0
		for {
			p, aerr := s.ListPage(ctx, alice, after, limit)
			if aerr != nil {
				t.Fatalf("limit %d, after %q: %v", limit, after, aerr)
			}
			pages++
			for _, tk := range p.Tasks {
				got = append(got, tk.ID)
			}
			if !p.HasMore || pages > 200 {
				break
			}
			after = p.Tasks[len(p.Tasks)-1].ID
		}
		if strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Errorf("limit %d: paged %d tasks, want the 105 newest first", limit, len(got))
		}
		if want := (105 + limit - 1) / limit; pages != want {
			t.Errorf("limit %d: %d pages, want %d", limit, pages, want)
		}
	}
	if _, aerr := s.ListPage(ctx, bob, ids[0], 20); aerr == nil || aerr.Status != 400 {
		t.Errorf("bob paging after alice's task: %v, want 400", aerr)
	}
	if p, _ := s.ListPage(ctx, alice, "", 20); !p.HasMore || len(p.Tasks) != 20 {
		t.Errorf("default page: %d tasks, has_more %v", len(p.Tasks), p.HasMore)
	}
}
