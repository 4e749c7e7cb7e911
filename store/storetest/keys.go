package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunKeys checks store.Keys: create and look up by hash, ErrExists on a
// taken id or hash, list by user oldest first, revocation that keeps its
// first time, and revocation reports.
func RunKeys(t *testing.T, b Backend) {
	t.Run("Scopes", func(t *testing.T) { runKeyScopes(t, b) })
	t.Run("Users", func(t *testing.T) { runKeyUsers(t, b) })
	t.Run("Regenerate", func(t *testing.T) { runKeyRegenerate(t, b) })
	ctx := context.Background()
	h := b.open(t)
	k := h.r.Keys
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := t0.Add(48 * time.Hour)
	keys := []store.Key{
		{ID: "key_a1", Hash: "h-a1", User: "alice", Name: "laptop", CreatedAt: t0.Add(2 * time.Second), ExpiresAt: &exp},
		{ID: "key_b1", Hash: "h-b1", User: "bob", CreatedAt: t0.Add(time.Second)},
		{ID: "key_a2", Hash: "h-a2", User: "alice", CreatedAt: t0},
	}
	for _, key := range keys {
		must(t, k.Create(ctx, key))
	}
	for i, tc := range []struct {
		name string
		key  store.Key
	}{
		{"taken id", store.Key{ID: "key_a1", Hash: "h-new", User: "eve", CreatedAt: t0}},
		{"taken hash", store.Key{ID: "key_new", Hash: "h-b1", User: "eve", CreatedAt: t0}},
	} {
		if err := k.Create(ctx, tc.key); !errors.Is(err, store.ErrExists) {
			t.Errorf("Test %d (%s): Create = %v, want ErrExists", i, tc.name, err)
		}
	}
	got, err := k.ByHash(ctx, "h-a1")
	if err != nil || got.ID != "key_a1" || got.User != "alice" || got.Name != "laptop" || got.Hash != "h-a1" ||
		!got.CreatedAt.Equal(keys[0].CreatedAt) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(exp) || got.RevokedAt != nil {
		t.Errorf("ByHash(h-a1) = %+v, %v", got, err)
	}
	if _, err := k.ByHash(ctx, "h-missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ByHash(missing) = %v, want ErrNotFound", err)
	}
	for i, tc := range []struct {
		user string
		want []string
	}{
		{"alice", []string{"key_a2", "key_a1"}},
		{"bob", []string{"key_b1"}},
		{"", []string{"key_a2", "key_b1", "key_a1"}},
		{"nobody", nil},
	} {
		list, err := k.List(ctx, tc.user)
		must(t, err)
		var ids []string
		for _, key := range list {
			ids = append(ids, key.ID)
		}
		if len(ids) != len(tc.want) || len(ids) > 0 && !equal(ids, tc.want) {
			t.Errorf("Test %d: List(%q) = %v, want %v", i, tc.user, ids, tc.want)
		}
	}

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reported := make(chan string, 8)
	k.Revocations(wctx, func(hash string) { reported <- hash })
	first := t0.Add(time.Hour)
	rev, err := k.Revoke(ctx, "key_b1", first)
	if err != nil || rev.RevokedAt == nil || !rev.RevokedAt.Equal(first) || rev.Hash != "h-b1" {
		t.Fatalf("Revoke = %+v, %v", rev, err)
	}
	select {
	case h := <-reported:
		if h != "h-b1" {
			t.Errorf("revocation reported %q, want h-b1", h)
		}
	case <-time.After(time.Second):
		t.Error("the revocation was not reported within 1 s")
	}
	// An update changes name, models and expiry, and every cache hears
	// of it.
	later := exp.Add(24 * time.Hour)
	upd, err := k.Update(ctx, "key_a1", store.KeyChange{Name: "desk", Models: []string{"gpt-4o", "claude-*"}, ExpiresAt: &later})
	if err != nil || upd.Name != "desk" || !equal(upd.Models, []string{"gpt-4o", "claude-*"}) || upd.ExpiresAt == nil || !upd.ExpiresAt.Equal(later) ||
		upd.User != "alice" || upd.Hash != "h-a1" || upd.RevokedAt != nil {
		t.Fatalf("Update = %+v, %v", upd, err)
	}
	select {
	case h := <-reported:
		if h != "h-a1" {
			t.Errorf("update reported %q, want h-a1", h)
		}
	case <-time.After(time.Second):
		t.Error("the update was not reported within 1 s")
	}
	if got, _ := k.ByHash(ctx, "h-a1"); got.Name != "desk" || !equal(got.Models, []string{"gpt-4o", "claude-*"}) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(later) {
		t.Errorf("ByHash after Update = %+v", got)
	}
	if upd, err := k.Update(ctx, "key_a1", store.KeyChange{}); err != nil || upd.Name != "" || len(upd.Models) != 0 || upd.ExpiresAt != nil {
		t.Errorf("clearing name, models and expiry: %+v, %v", upd, err)
	}
	<-reported
	if _, err := k.Update(ctx, "key_missing", store.KeyChange{Name: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Update(missing) = %v, want ErrNotFound", err)
	}
	again, err := k.Revoke(ctx, "key_b1", first.Add(time.Hour))
	if err != nil || again.RevokedAt == nil || !again.RevokedAt.Equal(first) {
		t.Errorf("second Revoke = %+v, %v; want the first time kept", again, err)
	}
	if got, _ := k.ByHash(ctx, "h-b1"); got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Errorf("ByHash after Revoke = %+v", got)
	}
	if _, err := k.Revoke(ctx, "key_missing", first); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Revoke(missing) = %v, want ErrNotFound", err)
	}
	// Keys survive a restart.
	b.reopen(t, h)
	if got, err := h.r.Keys.ByHash(ctx, "h-a2"); err != nil || got.ID != "key_a2" {
		t.Errorf("after reopening: ByHash(h-a2) = %+v, %v", got, err)
	}
}

// runKeyScopes checks a key's models and its last use: stored as
// created, moved only forward by Touch, unknown ids skipped, and kept
// across a restart.
func runKeyScopes(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	must(t, h.r.Keys.Create(ctx, store.Key{ID: "key_s1", Hash: "h-s1", User: "carol", CreatedAt: t0, Models: []string{"gpt-4o", "claude-*"}}))
	must(t, h.r.Keys.Create(ctx, store.Key{ID: "key_s2", Hash: "h-s2", User: "carol", CreatedAt: t0.Add(time.Second)}))
	got, err := h.r.Keys.ByHash(ctx, "h-s1")
	if err != nil || !equal(got.Models, []string{"gpt-4o", "claude-*"}) || got.LastUsedAt != nil {
		t.Errorf("ByHash(h-s1) = %+v, %v; want models [gpt-4o claude-*] and no last use", got, err)
	}
	if got, _ := h.r.Keys.ByHash(ctx, "h-s2"); len(got.Models) != 0 {
		t.Errorf("a key created without models has %v", got.Models)
	}
	used := t0.Add(time.Hour)
	must(t, h.r.Keys.Touch(ctx, map[string]time.Time{"key_s1": used, "key_s2": used.Add(time.Minute), "key_missing": used}))
	// An earlier time never moves the last use back.
	must(t, h.r.Keys.Touch(ctx, map[string]time.Time{"key_s1": t0}))
	for i, tc := range []struct {
		hash string
		want time.Time
	}{{"h-s1", used}, {"h-s2", used.Add(time.Minute)}} {
		got, err := h.r.Keys.ByHash(ctx, tc.hash)
		if err != nil || got.LastUsedAt == nil || !got.LastUsedAt.Equal(tc.want) {
			t.Errorf("Test %d: ByHash(%s).LastUsedAt = %v, %v; want %v", i, tc.hash, got.LastUsedAt, err, tc.want)
		}
	}
	b.reopen(t, h)
	list, err := h.r.Keys.List(ctx, "carol")
	if err != nil || len(list) != 2 || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(used) || !equal(list[0].Models, []string{"gpt-4o", "claude-*"}) {
		t.Errorf("after reopening: List(carol) = %+v, %v", list, err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
