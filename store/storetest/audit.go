package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// RunAudit checks store.Audit: entries come back newest first, filtered
// and paged by cursor, survive a restart, and an id is stored once.
func RunAudit(t *testing.T, b Backend) {
	h := b.open(t)
	ctx := context.Background()
	base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for i := range 7 {
		actor := "alice"
		if i%2 == 1 {
			actor = "admin-api"
		}
		e := store.AuditEntry{ID: fmt.Sprintf("e%d", i), Time: base.Add(time.Duration(i) * time.Minute), Actor: actor, Via: "console",
			ClientIP: "192.0.2.1", Action: "key.create", TargetType: "key", TargetID: fmt.Sprintf("k%d", i%3),
			After: []byte(fmt.Sprintf(`{"name":"n%d"}`, i))}
		if i == 6 {
			e.Action, e.Before, e.After = "key.revoke", []byte(`{"name":"n"}`), nil
		}
		must(t, h.r.Audit.Append(ctx, e))
	}
	dup := store.AuditEntry{ID: "e0", Time: base, Actor: "x", Via: "cli", Action: "a", TargetType: "t", TargetID: "i"}
	if err := h.r.Audit.Append(ctx, dup); !errors.Is(err, store.ErrExists) {
		t.Fatalf("appending an id twice: %v, want ErrExists", err)
	}
	list := func(q store.AuditQuery, limit int) (ids []string, last string) {
		t.Helper()
		must(t, h.r.Audit.List(ctx, q, func(e store.AuditEntry, c string) error {
			ids, last = append(ids, e.ID), c
			if len(ids) == limit {
				return store.ErrStop
			}
			return nil
		}))
		return ids, last
	}
	if got, _ := list(store.AuditQuery{}, 0); fmt.Sprint(got) != "[e6 e5 e4 e3 e2 e1 e0]" {
		t.Errorf("every entry: %v, want newest first", got)
	}
	page1, cur := list(store.AuditQuery{}, 3)
	page2, _ := list(store.AuditQuery{Before: cur}, 3)
	if fmt.Sprint(page1, page2) != "[e6 e5 e4] [e3 e2 e1]" {
		t.Errorf("pages: %v %v", page1, page2)
	}
	for _, c := range []struct {
		q    store.AuditQuery
		want string
	}{
		{store.AuditQuery{Actor: "admin-api"}, "[e5 e3 e1]"},
		{store.AuditQuery{TargetID: "k0"}, "[e6 e3 e0]"},
		{store.AuditQuery{Action: "key.revoke"}, "[e6]"},
		{store.AuditQuery{Since: base.Add(4 * time.Minute)}, "[e6 e5 e4]"},
		{store.AuditQuery{Until: base.Add(2 * time.Minute)}, "[e1 e0]"},
		{store.AuditQuery{Since: base.Add(time.Minute), Until: base.Add(3 * time.Minute), Actor: "alice"}, "[e2]"},
	} {
		if got, _ := list(c.q, 0); fmt.Sprint(got) != c.want {
			t.Errorf("%+v: %v, want %s", c.q, got, c.want)
		}
	}
	if err := h.r.Audit.List(ctx, store.AuditQuery{Before: "nonsense"}, func(store.AuditEntry, string) error { return nil }); err == nil {
		t.Error("a bad cursor was accepted")
	}
	b.reopen(t, h)
	var got []store.AuditEntry
	must(t, h.r.Audit.List(ctx, store.AuditQuery{TargetID: "k0"}, func(e store.AuditEntry, _ string) error {
		got = append(got, e)
		return nil
	}))
	if len(got) != 3 {
		t.Fatalf("after a restart: %d entries of k0, want 3", len(got))
	}
	e := got[0]
	if e.ID != "e6" || !e.Time.Equal(base.Add(6*time.Minute)) || e.Actor != "alice" || e.Via != "console" || e.ClientIP != "192.0.2.1" ||
		e.Action != "key.revoke" || e.TargetType != "key" || e.After != nil || !sameJSON(e.Before, `{"name":"n"}`) {
		t.Errorf("entry read back: %+v", e)
	}
	if !sameJSON(got[1].After, `{"name":"n3"}`) {
		t.Errorf("after of e3: %s", got[1].After)
	}
}

// sameJSON reports whether b and want are the same JSON value.
func sameJSON(b []byte, want string) bool {
	var x, y any
	if json.Unmarshal(b, &x) != nil || json.Unmarshal([]byte(want), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
