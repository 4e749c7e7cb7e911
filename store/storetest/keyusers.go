package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// runKeyUsers checks List by user among the keys of several users whose
// names are prefixes of one another: exactly the user's keys, oldest
// first (ties by id), revoked keys included, after a restart, and after
// an upgrade from storage without the backend's indexes.
func runKeyUsers(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	t0 := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	// Created in an order that is not the order of their times.
	keys := []store.Key{
		{ID: "key_u3", Hash: "h-u3", User: "alice", CreatedAt: t0.Add(3 * time.Second)},
		{ID: "key_u1", Hash: "h-u1", User: "alice", CreatedAt: t0.Add(time.Second)},
		{ID: "key_u5", Hash: "h-u5", User: "al", CreatedAt: t0.Add(time.Second)},
		{ID: "key_u2", Hash: "h-u2", User: "al/ice", CreatedAt: t0.Add(2 * time.Second)},
		{ID: "key_u0", Hash: "h-u0", User: "alice", CreatedAt: time.Date(1969, 7, 20, 20, 17, 0, 0, time.UTC)},
		{ID: "key_u4", Hash: "h-u4", User: "alice", CreatedAt: t0.Add(3 * time.Second)}, // same time as key_u3
		{ID: "key_u6", Hash: "h-u6", User: "alice2", CreatedAt: t0.Add(500 * time.Millisecond)},
	}
	for _, k := range keys {
		must(t, h.r.Keys.Create(ctx, k))
	}
	want := map[string][]string{
		"alice":  {"key_u0", "key_u1", "key_u3", "key_u4"},
		"al":     {"key_u5"},
		"al/ice": {"key_u2"},
		"alice2": {"key_u6"},
		"ali":    nil,
		"":       {"key_u0", "key_u6", "key_u1", "key_u5", "key_u2", "key_u3", "key_u4"},
	}
	checkKeyLists(t, h.r.Keys, "created", want)
	revokedAt := t0.Add(time.Hour)
	_, err := h.r.Keys.Revoke(ctx, "key_u1", revokedAt)
	must(t, err)
	must(t, h.r.Keys.Touch(ctx, map[string]time.Time{"key_u3": t0.Add(2 * time.Hour)}))
	checkKeyLists(t, h.r.Keys, "revoked", want)
	list, err := h.r.Keys.List(ctx, "alice")
	if err != nil || len(list) != 4 || list[1].RevokedAt == nil || !list[1].RevokedAt.Equal(revokedAt) || list[1].Hash != "h-u1" ||
		list[2].LastUsedAt == nil || list[2].User != "alice" || !list[0].CreatedAt.Equal(keys[4].CreatedAt) {
		t.Errorf("List(alice) = %+v, %v; want key_u1 revoked at %v and key_u3 used", list, err, revokedAt)
	}
	b.reopen(t, h)
	checkKeyLists(t, h.r.Keys, "reopened", want)
	if b.DropIndexes == nil {
		return
	}
	b.DropIndexes(t, h.r)
	b.reopen(t, h)
	checkKeyLists(t, h.r.Keys, "upgraded", want)
	must(t, h.r.Keys.Create(ctx, store.Key{ID: "key_u7", Hash: "h-u7", User: "alice", CreatedAt: t0.Add(2 * time.Second)}))
	want["alice"] = []string{"key_u0", "key_u1", "key_u7", "key_u3", "key_u4"}
	want[""] = []string{"key_u0", "key_u6", "key_u1", "key_u5", "key_u2", "key_u7", "key_u3", "key_u4"}
	checkKeyLists(t, h.r.Keys, "created after the upgrade", want)
	b.reopen(t, h)
	checkKeyLists(t, h.r.Keys, "reopened after the upgrade", want)
}

// checkKeyLists checks that List(user) is want[user], in order, for every
// user of want.
func checkKeyLists(t *testing.T, k store.Keys, stage string, want map[string][]string) {
	t.Helper()
	for user, ids := range want {
		list, err := k.List(context.Background(), user)
		if err != nil {
			t.Errorf("%s: List(%q): %v", stage, user, err)
			continue
		}
		var got []string
		for _, key := range list {
			got = append(got, key.ID)
			if user != "" && key.User != user {
				t.Errorf("%s: List(%q) has key %s of %q", stage, user, key.ID, key.User)
			}
		}
		if !equal(got, ids) {
			t.Errorf("%s: List(%q) = %v, want %v", stage, user, got, ids)
		}
	}
}
