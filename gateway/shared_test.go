package gateway

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// openShared opens a Shared on a Badger store in a temporary directory,
// under key.
func openShared(t *testing.T, key string) *Shared {
	t.Helper()
	dir := t.TempDir()
	repos, err := badger.OpenRepos(badger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	sh, err := Open(repos, Options{Key: key, Dir: dir, MinFree: 1, RequestLogQueue: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !sh.Closed() {
			_ = sh.close()
		}
	})
	return sh
}

// createKey makes a key through sh, which needs its store open.
func createKey(sh *Shared) error {
	_, _, err := sh.CreateKey(context.Background(), keys.CreateOptions{User: "alice"})
	return err
}

// TestSharedCloses checks the life of a Shared whose last config lets go
// (Destruct): with nothing in flight it closes at once and refuses every
// request after; with an exchange in flight it keeps serving it, its
// store open, until that exchange ends, and refuses new ones only then.
func TestSharedCloses(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		sh := openShared(t, t.Name())
		if err := createKey(sh); err != nil {
			t.Fatalf("an open Shared refuses writes: %v", err)
		}
		if err := sh.Destruct(); err != nil {
			t.Fatal(err)
		}
		if !sh.Closed() {
			t.Fatal("a Shared with nothing in flight stays open once its last config let go")
		}
		if sh.Enter() {
			t.Error("a closed Shared takes a new request")
		}
		if Resume(t.Name()) != nil {
			t.Error("a closed Shared is taken back by the next config")
		}
	})
	t.Run("in flight", func(t *testing.T) {
		sh := openShared(t, t.Name())
		if !sh.Enter() {
			t.Fatal("an open Shared refuses a request")
		}
		if err := sh.Destruct(); err != nil {
			t.Fatal(err)
		}
		if sh.Closed() {
			t.Fatal("the Shared closed under a request in flight")
		}
		// The request in flight settles: its store still takes writes.
		if err := createKey(sh); err != nil {
			t.Fatalf("the request in flight cannot write once its config let go: %v", err)
		}
		if !sh.Enter() {
			t.Fatal("a draining Shared refuses a request on an open connection")
		}
		sh.Leave()
		if sh.Closed() {
			t.Fatal("the Shared closed while the first request is still in flight")
		}
		sh.Leave() // the last one out closes it
		if !sh.Closed() {
			t.Fatal("the Shared stays open after its last request ended")
		}
		if sh.Enter() {
			t.Error("a closed Shared takes a new request")
		}
		if err := createKey(sh); err == nil {
			t.Error("the store of a closed Shared still takes writes")
		}
	})
}

// TestSharedResume checks that a config starting on a storage that still
// drains takes the same Shared back: the last request in flight no
// longer closes it, and it closes once that config lets go in turn.
func TestSharedResume(t *testing.T) {
	sh := openShared(t, t.Name())
	if !sh.Enter() {
		t.Fatal("an open Shared refuses a request")
	}
	if err := sh.Destruct(); err != nil {
		t.Fatal(err)
	}
	if got := Resume(t.Name()); got != sh {
		t.Fatalf("Resume = %p, want the draining Shared %p", got, sh)
	}
	if Resume(t.Name()) != nil {
		t.Error("a Shared taken back is still listed as draining")
	}
	sh.Leave()
	if sh.Closed() {
		t.Fatal("the last request in flight closed a Shared that a new config took back")
	}
	if err := createKey(sh); err != nil {
		t.Fatalf("a Shared taken back refuses writes: %v", err)
	}
	if err := sh.Destruct(); err != nil {
		t.Fatal(err)
	}
	if !sh.Closed() {
		t.Error("the Shared stays open after its new config let go with nothing in flight")
	}
}

// TestLive checks what handlers are served with: nothing before Set, the
// Shared and Services after, still after Stop (the HTTP servers of a
// stopped config may take requests on open connections), and nothing once
// the Shared closed; only the first Stop lets go of the Shared.
func TestLive(t *testing.T) {
	var l Live
	if sh, s := l.Load(); sh != nil || s != nil {
		t.Fatal("a Live serves before Set")
	}
	if s, first := l.Stop(); s != nil || first {
		t.Fatal("Stop before Set returns services")
	}
	sh := openShared(t, t.Name())
	s := &Services{shared: sh}
	l.Set(s)
	if gotSh, got := l.Load(); gotSh != sh || got != s {
		t.Fatalf("Load = %p, %p after Set, want %p, %p", gotSh, got, sh, s)
	}
	if got, first := l.Stop(); got != s || !first {
		t.Fatalf("first Stop = %p, %v", got, first)
	}
	if _, second := l.Stop(); second {
		t.Error("a second Stop lets go of the Shared again")
	}
	if l.Shared() != sh || l.Services() != s {
		t.Fatal("a stopped config no longer serves while its Shared is open")
	}
	if err := sh.Destruct(); err != nil {
		t.Fatal(err)
	}
	if l.Shared() != nil || l.Services() != nil {
		t.Error("a Live serves once its Shared closed")
	}
}

// TestOpenClosesReposOnFailure checks that a Shared that fails to open
// closes the repositories it was given.
func TestOpenClosesReposOnFailure(t *testing.T) {
	dir := t.TempDir()
	repos, err := badger.OpenRepos(badger.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	c := &countCloser{Closer: repos.Closer}
	repos.Budgets, repos.Closer = failingBudgets{repos.Budgets}, c
	if _, err := Open(repos, Options{}); !errors.Is(err, errLoad) {
		t.Fatalf("Open with budgets that cannot load: %v", err)
	}
	if c.n != 1 {
		t.Errorf("repositories closed %d times, want 1", c.n)
	}
}

// errLoad is the error of failingBudgets.
var errLoad = errors.New("disk on fire")

// failingBudgets cannot read the limits.
type failingBudgets struct{ store.Budgets }

func (failingBudgets) Limits(context.Context, func(store.Subject, store.Limits) error) error {
	return errLoad
}

// countCloser counts the calls of Close.
type countCloser struct {
	io.Closer
	n int
}

func (c *countCloser) Close() error { c.n++; return c.Closer.Close() }
