package keys

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestUpdateAppliesAtOnceEverywhere: a key cached by two services on one
// repository has its models and expiry changed through one; both answer
// the next request with the new ones.
func TestUpdateAppliesAtOnceEverywhere(t *testing.T) {
	a, _ := newTestService(t)
	ctx := context.Background()
	b := NewService(ctx, a.store)
	secret, k, err := a.Create(ctx, CreateOptions{User: "erin", Name: "ci", Models: []string{"gpt-4o"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Service{a, b} {
		if got, err := s.Authenticate(ctx, secret); err != nil || strings.Join(got.Models, ",") != "gpt-4o" {
			t.Fatalf("before: %+v, %v", got, err)
		}
	}
	exp := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	upd, err := a.Update(ctx, k.ID, Change{Models: &[]string{"claude-*", "o3"}, ExpiresAt: &exp})
	if err != nil || upd.Name != "ci" || strings.Join(upd.Models, ",") != "claude-*,o3" || upd.ExpiresAt == nil || !upd.ExpiresAt.Equal(exp) {
		t.Fatalf("Update = %+v, %v (the name is kept, models and expiry replaced)", upd, err)
	}
	for i, s := range []*Service{a, b} {
		got, err := s.Authenticate(ctx, secret)
		if err != nil || strings.Join(got.Models, ",") != "claude-*,o3" || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) {
			t.Errorf("service %d after the update: %+v, %v", i, got, err)
		}
	}
	// Every model again, and no expiry.
	if upd, err := a.Update(ctx, k.ID, Change{Models: &[]string{}, NoExpiry: true}); err != nil || len(upd.Models) != 0 || upd.ExpiresAt != nil {
		t.Errorf("clearing: %+v, %v", upd, err)
	}
	past := time.Now().Add(-time.Minute)
	for i, tc := range []struct {
		id   string
		c    Change
		want string
	}{
		{k.ID, Change{ExpiresAt: &past}, "expiry must be in the future"},
		{k.ID, Change{Models: &[]string{"gpt-["}}, "model"},
		{k.ID, Change{Name: ptr("a\x1bb")}, "name:"},
		{k.ID, Change{ExpiresAt: &exp, NoExpiry: true}, "choose one"},
	} {
		if _, err := a.Update(ctx, tc.id, tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Test %d: %v, want an error with %q", i, err, tc.want)
		}
	}
	if _, err := a.Update(ctx, "key_missing", Change{Name: ptr("x")}); !errors.Is(err, ErrNoSuchKey) {
		t.Errorf("unknown key: %v, want ErrNoSuchKey", err)
	}
}
