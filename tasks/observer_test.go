package tasks

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

// recordingObserver records what a Service reports.
type recordingObserver struct {
	mu             sync.Mutex
	statuses       []string
	polls, failing map[string]int
}

func newRecordingObserver() *recordingObserver {
	return &recordingObserver{polls: map[string]int{}, failing: map[string]int{}}
}

func (o *recordingObserver) TaskStatus(kind, status string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.statuses = append(o.statuses, kind+" "+status)
}

func (o *recordingObserver) TaskPolled(provider string, failed bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.polls[provider]++
	if failed {
		o.failing[provider]++
	}
}

func (o *recordingObserver) snapshot() (statuses []string, polls, failing int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.statuses), o.polls["up"], o.failing["up"]
}

// TestObserverSeesStatusesAndPolls: a video task reports running, then
// succeeded; each upstream poll is reported, a failed one as failed.
func TestObserverSeesStatusesAndPolls(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f := &fakeOpenAIVideo{}
	f.install(e)
	obs := newRecordingObserver()
	s := e.service(func(c *Config) { c.Observer = obs })
	ctx := context.Background()
	f.set(`not json`)
	e.run(s)
	tk, aerr := s.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"a wave"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	waitFor(t, "a failed poll", func() bool { _, _, failing := obs.snapshot(); return failing > 0 })
	f.set(`{"id":"video_123","object":"video","status":"completed","progress":100,"seconds":"8"}`)
	waitStatus(t, s, alice, tk.ID, StatusSucceeded)
	// The store has the task's status before the observer hears of it,
	// and the poll that saw it done is reported after its outcome.
	waitFor(t, "the observer to see the task succeed", func() bool {
		statuses, polls, _ := obs.snapshot()
		return len(statuses) >= 2 && polls >= 2
	})
	statuses, polls, failing := obs.snapshot()
	if want := []string{"video running", "video succeeded"}; !slices.Equal(statuses, want) {
		t.Errorf("statuses %v, want %v", statuses, want)
	}
	if polls < 2 || failing < 1 || failing >= polls {
		t.Errorf("%d polls, %d failed: want a failed one and a good one", polls, failing)
	}

	// A task the upstream fails reports failed, once.
	e2 := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	f2 := &fakeOpenAIVideo{}
	f2.install(e2)
	f2.set(`{"id":"video_123","object":"video","status":"failed","error":{"code":"internal_error","message":"no"}}`)
	obs2 := newRecordingObserver()
	s2 := e2.service(func(c *Config) { c.Observer = obs2 })
	e2.run(s2)
	tk2, aerr := s2.Create(ctx, alice, []byte(`{"model":"sora-2","prompt":"a wave"}`), testMediaBase)
	if aerr != nil {
		t.Fatal(aerr)
	}
	waitStatus(t, s2, alice, tk2.ID, StatusFailed)
	waitFor(t, "the observer to see the task fail", func() bool { statuses, _, _ := obs2.snapshot(); return len(statuses) >= 2 })
	if statuses, _, _ := obs2.snapshot(); !slices.Equal(statuses, []string{"video running", "video failed"}) {
		t.Errorf("statuses %v, want running then failed", statuses)
	}
}
