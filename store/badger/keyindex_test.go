package badger

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestKeyIndexUpgrade opens a store whose keys were written by a version
// before the index by user (raw k/h/ and k/i/ entries, one of them
// undecodable): the first open indexes the keys it can decode, logs the
// other, and lists each user's keys; the next open builds nothing.
func TestKeyIndexUpgrade(t *testing.T) {
	ctx := context.Background()
	db, err := Open(Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k, v := range map[string]string{
		"k/h/h1":    `{"id":"key_1","user":"bob","created_at":"2026-01-02T00:00:00Z"}`,
		"k/i/key_1": "h1",
		"k/h/h2":    `{"id":"key_2","user":"bob","created_at":"2026-01-01T00:00:00.5Z","revoked_at":"2026-01-03T00:00:00Z"}`,
		"k/i/key_2": "h2",
		"k/h/h3":    `{"id":"key_3","user":"bobby","created_at":"2025-12-31T00:00:00Z"}`,
		"k/i/key_3": "h3",
		"k/h/h4":    `{"id":`,
		"k/i/key_4": "h4",
	} {
		if err := db.Set(ctx, []byte(k), []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		name      string
		wantBuilt bool
	}{{"first open", true}, {"second open", false}} {
		core, logs := observer.New(zap.InfoLevel)
		r, err := OpenKeys(ctx, db, zap.New(core))
		if err != nil {
			t.Fatalf("Test %d (%s): OpenKeys: %v", i, tc.name, err)
		}
		if built := logs.FilterMessage("built the key index by user").Len() == 1; built != tc.wantBuilt {
			t.Errorf("Test %d (%s): index built = %v, want %v", i, tc.name, built, tc.wantBuilt)
		}
		if tc.wantBuilt && logs.FilterMessage("key left out of the index by user: undecodable").Len() != 1 {
			t.Errorf("Test %d (%s): the undecodable key was not logged: %v", i, tc.name, logs.All())
		}
		list, err := r.List(ctx, "bob")
		if err != nil || len(list) != 2 || list[0].ID != "key_2" || list[0].Hash != "h2" || list[0].RevokedAt == nil || list[1].ID != "key_1" {
			t.Errorf("Test %d (%s): List(bob) = %+v, %v; want key_2 (revoked), key_1", i, tc.name, list, err)
		}
		if list, err := r.List(ctx, "bobby"); err != nil || len(list) != 1 || list[0].ID != "key_3" {
			t.Errorf("Test %d (%s): List(bobby) = %+v, %v; want key_3", i, tc.name, list, err)
		}
		if _, err := r.List(ctx, ""); err == nil {
			t.Errorf("Test %d (%s): List(\"\") read the undecodable key without an error", i, tc.name)
		}
	}
}
