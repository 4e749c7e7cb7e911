package teams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store/badger"
)

func newService(t *testing.T, refresh time.Duration) (*Service, *badger.Teams) {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	repo := badger.NewTeams(db)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := NewService(ctx, repo, refresh)
	if err != nil {
		t.Fatal(err)
	}
	return s, repo
}

// TestMembership checks that Of follows every change at once, that a user
// joins one team at most, and the errors of bad input.
func TestMembership(t *testing.T) {
	ctx := context.Background()
	s, _ := newService(t, 0)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Create(ctx, "search", []string{"gpt-*"}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "ads", nil, now); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		name string
		err  error
		fn   func() error
	}{
		{"taken name", ErrExists, func() error { _, err := s.Create(ctx, "search", nil, now); return err }},
		{"bad name", ErrInvalid, func() error { _, err := s.Create(ctx, "a b", nil, now); return err }},
		{"long name", ErrInvalid, func() error { _, err := s.Create(ctx, string(make([]byte, 65)), nil, now); return err }},
		{"bad glob", ErrInvalid, func() error { _, err := s.Create(ctx, "x", []string{"gpt-["}, now); return err }},
		{"add", nil, func() error { return s.Add(ctx, "search", "alice", true) }},
		{"other team", ErrExists, func() error { return s.Add(ctx, "ads", "alice", false) }},
		{"unknown team", ErrNotFound, func() error { return s.Add(ctx, "nope", "bob", false) }},
		{"blank user", ErrInvalid, func() error { return s.Add(ctx, "ads", " ", false) }},
		{"remove non-member", ErrNotFound, func() error { return s.Remove(ctx, "ads", "alice") }},
	} {
		if err := tc.fn(); !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Test %d (%s): %v, want %v", i, tc.name, err, tc.err)
		}
	}
	team := s.Of("alice")
	if team == nil || team.Name != "search" || !team.IsAdmin("alice") || !team.Allows("gpt-4o") || team.Allows("claude-x") {
		t.Fatalf("Of(alice) = %+v, want search, admin, gpt-* only", team)
	}
	if err := s.SetModels(ctx, "search", nil); err != nil {
		t.Fatal(err)
	}
	if !s.Of("alice").Allows("claude-x") {
		t.Error("models cleared, but the team still refuses claude-x")
	}
	if err := s.Remove(ctx, "search", "alice"); err != nil {
		t.Fatal(err)
	}
	if got := s.Of("alice"); got != nil {
		t.Errorf("Of(alice) after removal = %+v, want nil", got)
	}
}

// TestRefreshSeesOtherInstances checks that a change written to the store
// by another instance reaches Of within the refresh interval.
func TestRefreshSeesOtherInstances(t *testing.T) {
	ctx := context.Background()
	s, repo := newService(t, 20*time.Millisecond)
	if _, err := s.Create(ctx, "search", nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Another instance adds bob directly to the shared store.
	if err := repo.AddMember(ctx, "search", "bob", false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for s.Of("bob") == nil {
		if time.Now().After(deadline) {
			t.Fatal("bob's membership never reached this instance")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
