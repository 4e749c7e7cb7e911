package keys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

func TestAllows(t *testing.T) {
	for i, tc := range []struct {
		models []string
		model  string
		want   bool
	}{
		{nil, "anything", true},
		{[]string{"gpt-4o"}, "gpt-4o", true},
		{[]string{"gpt-4o"}, "gpt-4o-mini", false},
		{[]string{"gpt-4o", "claude-*"}, "claude-sonnet-4", true},
		{[]string{"claude-*"}, "qwen-plus", false},
		{[]string{"qwen?-max"}, "qwen3-max", true},
		{[]string{"gpt-4o"}, "", false},
	} {
		k := &Key{Models: tc.models}
		if got := k.Allows(tc.model); got != tc.want {
			t.Errorf("Test %d: %v allows %q = %v, want %v", i, tc.models, tc.model, got, tc.want)
		}
	}
}

func TestCreateScopes(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	secret, k, err := s.Create(ctx, CreateOptions{User: "alice", Models: []string{" gpt-4o", "claude-*", "gpt-4o", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(k.Models, ",") != "gpt-4o,claude-*" || k.State != StateActive {
		t.Errorf("created %+v; want models [gpt-4o claude-*], active", k)
	}
	got, err := NewService(ctx, s.store).Authenticate(ctx, secret)
	if err != nil || !got.Allows("claude-opus-4") || got.Allows("qwen-plus") {
		t.Errorf("after a restart the key's scope is %v (%v)", got, err)
	}
	if _, _, err := s.Create(ctx, CreateOptions{User: "alice", Models: []string{"claude-["}}); err == nil {
		t.Error("a malformed glob was accepted")
	}
	if _, _, err := s.Create(ctx, CreateOptions{User: "alice", Limit: "5"}); err == nil {
		t.Error("a limit was accepted without a Limiter")
	}
}

// fakeLimiter records the limits set and refuses "bad".
type fakeLimiter struct{ set map[string]string }

func (f *fakeLimiter) LimitKey(_ context.Context, id, limit string) error {
	if limit == "bad" {
		return errors.New("bad amount")
	}
	f.set[id] = limit
	return nil
}

func TestCreateLimit(t *testing.T) {
	s, _ := newTestService(t)
	lim := &fakeLimiter{set: map[string]string{}}
	s.Limiter = lim
	ctx := context.Background()
	_, k, err := s.Create(ctx, CreateOptions{User: "alice", Limit: "5.00"})
	if err != nil || lim.set[k.ID] != "5.00" {
		t.Fatalf("Create with a limit: %v; limits set %v", err, lim.set)
	}
	if _, _, err := s.Create(ctx, CreateOptions{User: "alice", Limit: "bad"}); err == nil {
		t.Fatal("a bad limit was accepted")
	}
	list, _ := s.List(ctx, "alice")
	if len(list) != 1 {
		t.Errorf("a refused limit left a key: %d keys", len(list))
	}
}

// touchCounter counts the Touch calls of a store.
type touchCounter struct {
	store.Keys
	calls int
}

func (c *touchCounter) Touch(ctx context.Context, used map[string]time.Time) error {
	c.calls++
	return c.Keys.Touch(ctx, used)
}

func TestLastUsedCoalesced(t *testing.T) {
	base, _ := newTestService(t)
	tc := &touchCounter{Keys: base.store}
	ctx := context.Background()
	s := NewService(ctx, tc)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	secret, k, err := s.Create(ctx, CreateOptions{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "alice"); list[0].LastUsedAt != nil {
		t.Fatalf("an unused key has a last use: %v", list[0].LastUsedAt)
	}
	first := now
	for i := 0; i < 100; i++ {
		if _, err := s.Authenticate(ctx, secret); err != nil {
			t.Fatal(err)
		}
		now = now.Add(100 * time.Millisecond)
	}
	// Before the flush the console already sees the use.
	if list, _ := s.List(ctx, "alice"); list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(first) {
		t.Errorf("before the flush: last use %v, want %v", list[0].LastUsedAt, first)
	}
	if err := s.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushUses(ctx); err != nil {
		t.Fatal(err)
	}
	if tc.calls != 1 {
		t.Errorf("100 requests within a minute made %d writes, want 1", tc.calls)
	}
	stored, _ := tc.List(ctx, "alice")
	if stored[0].LastUsedAt == nil || !stored[0].LastUsedAt.Equal(first) {
		t.Errorf("stored last use %v, want %v", stored[0].LastUsedAt, first)
	}
	now = first.Add(TouchEvery + time.Second)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	_ = s.FlushUses(ctx)
	stored, _ = tc.List(ctx, "alice")
	if tc.calls != 2 || stored[0].LastUsedAt == nil || !stored[0].LastUsedAt.Equal(now) {
		t.Errorf("a use a minute later: %d writes, last use %v; want 2 and %v", tc.calls, stored[0].LastUsedAt, now)
	}
	if _, err := s.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "alice"); list[0].State != StateRevoked {
		t.Errorf("state after revoking %q", list[0].State)
	}
}

func TestStateAt(t *testing.T) {
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	for i, tc := range []struct {
		k    Key
		want string
	}{
		{Key{}, StateActive},
		{Key{ExpiresAt: &future}, StateActive},
		{Key{ExpiresAt: &past}, StateExpired},
		{Key{ExpiresAt: &past, RevokedAt: &past}, StateRevoked},
	} {
		if got := tc.k.StateAt(now); got != tc.want {
			t.Errorf("Test %d: state %q, want %q", i, got, tc.want)
		}
	}
}

func TestRevokeOwn(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	secret, k, err := s.Create(ctx, CreateOptions{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeOwn(ctx, "bob", k.ID); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("bob revoking alice's key: %v, want ErrNoSuchKey", err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatalf("alice's key after bob's attempt: %v", err)
	}
	if got, err := s.RevokeOwn(ctx, "alice", k.ID); err != nil || got.State != StateRevoked {
		t.Fatalf("alice revoking her key: %+v, %v", got, err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
		t.Errorf("after revoking: %v, want ErrRevoked", err)
	}
}
