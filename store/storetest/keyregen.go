package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// runKeyRegenerate checks Regenerate: the key moves to its new hash, is
// found by its previous one with the grace's end, keeps one previous hash
// only, lists once, reports its former hashes to the watchers, and all of
// it survives a restart; and that Update sets and clears the allowed IPs.
func runKeyRegenerate(t *testing.T, b Backend) {
	ctx := context.Background()
	h := b.open(t)
	k := h.r.Keys
	var mu sync.Mutex
	reported := map[string]bool{}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	k.Revocations(wctx, func(hash string) { mu.Lock(); reported[hash] = true; mu.Unlock() })
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	must(t, k.Create(ctx, store.Key{ID: "key_r", Hash: "h-r0", User: "rita", CreatedAt: t0, AllowIPs: []string{"10.0.0.0/8"}}))
	must(t, k.Create(ctx, store.Key{ID: "key_o", Hash: "h-o0", User: "otto", CreatedAt: t0}))
	grace := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	got, err := k.Regenerate(ctx, "key_r", "h-r1", grace)
	if err != nil || got.Hash != "h-r1" || got.PrevHash != "h-r0" || got.PrevUntil == nil || !got.PrevUntil.Equal(grace) || got.User != "rita" {
		t.Fatalf("Regenerate = %+v, %v", got, err)
	}
	if _, err := k.Regenerate(ctx, "key_r", "h-o0", grace); !errors.Is(err, store.ErrExists) {
		t.Errorf("Regenerate to a taken hash = %v, want ErrExists", err)
	}
	if _, err := k.Regenerate(ctx, "key_missing", "h-x", grace); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Regenerate(missing) = %v, want ErrNotFound", err)
	}
	check := func(when string, prev string) {
		t.Helper()
		for _, hash := range []string{"h-r1", prev} {
			got, err := k.ByHash(ctx, hash)
			if err != nil || got.ID != "key_r" || got.Hash != "h-r1" || got.PrevHash != prev || len(got.AllowIPs) != 1 || got.AllowIPs[0] != "10.0.0.0/8" {
				t.Errorf("%s: ByHash(%s) = %+v, %v", when, hash, got, err)
			}
		}
		list, err := k.List(ctx, "rita")
		if err != nil || len(list) != 1 || list[0].Hash != "h-r1" {
			t.Errorf("%s: List(rita) = %+v, %v; want the key once, by its new hash", when, list, err)
		}
		if all, err := k.List(ctx, ""); err != nil || len(all) != 2 {
			t.Errorf("%s: List() = %+v, %v; want 2 keys", when, all, err)
		}
	}
	check("after a regenerate", "h-r0")
	// A second regenerate forgets h-r0.
	if _, err := k.Regenerate(ctx, "key_r", "h-r2", time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.ByHash(ctx, "h-r0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ByHash(h-r0) after a second regenerate = %v, want ErrNotFound", err)
	}
	if got, err := k.ByHash(ctx, "h-r1"); err != nil || got.Hash != "h-r2" || got.PrevUntil == nil || got.PrevUntil.After(time.Now()) {
		t.Errorf("ByHash(h-r1) = %+v, %v; want the key with its grace over", got, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		ok := reported["h-r0"] && reported["h-r1"]
		mu.Unlock()
		if ok || time.Now().After(deadline) {
			if !ok {
				t.Errorf("reported %v; want h-r0 and h-r1", reported)
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Touch and Update find the key by its id after the move.
	must(t, k.Touch(ctx, map[string]time.Time{"key_r": t0.Add(time.Hour)}))
	upd, err := k.Update(ctx, "key_r", store.KeyChange{Name: "moved", AllowIPs: []string{"192.0.2.0/24", "2001:db8::/32"}, LogRequests: true})
	if err != nil || upd.Name != "moved" || len(upd.AllowIPs) != 2 || upd.Hash != "h-r2" || !upd.LogRequests {
		t.Fatalf("Update = %+v, %v", upd, err)
	}
	b.reopen(t, h)
	k = h.r.Keys
	got, err = k.ByHash(ctx, "h-r1")
	if err != nil || got.ID != "key_r" || got.Name != "moved" || got.LastUsedAt == nil || len(got.AllowIPs) != 2 || got.AllowIPs[1] != "2001:db8::/32" || !got.LogRequests {
		t.Errorf("after a restart, ByHash(h-r1) = %+v, %v", got, err)
	}
	if upd, err := k.Update(ctx, "key_r", store.KeyChange{Name: "moved"}); err != nil || upd.AllowIPs != nil || upd.LogRequests {
		t.Errorf("Update without IPs = %+v, %v; want no allowed IPs and request logs off", upd, err)
	}
}
