package caddymodule

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

// TestAuditSharedOnPostgres checks that two instances on one PostgreSQL
// database share one trail: a change made through each is listed by the
// other, newest first, with its actor.
func TestAuditSharedOnPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	open := func() *state {
		st, err := openState(openPostgres(t, dsn), 0, 0, zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.close() })
		return st
	}
	a, b := open(), open()
	ctxA := audit.WithActor(context.Background(), audit.Actor{Name: "alice", Via: audit.ViaConsole, ClientIP: "192.0.2.1"})
	ctxB := audit.WithActor(context.Background(), audit.Actor{Name: audit.ViaAdminAPI, Via: audit.ViaAdminAPI, ClientIP: "192.0.2.2"})
	_, k, err := a.createKey(ctxA, keys.CreateOptions{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.setLimits(ctxB, billing.ScopeKey, k.ID, billing.Limits{RPM: 4}); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*state{"a": a, "b": b} {
		p, err := st.audit.List(context.Background(), audit.Query{AuditQuery: store.AuditQuery{TargetID: k.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) != 2 || p.Entries[0].Action != "budget.set" || p.Entries[0].Actor != "admin-api" ||
			p.Entries[1].Action != "key.create" || p.Entries[1].Actor != "alice" || p.Entries[1].ClientIP != "192.0.2.1" {
			t.Errorf("instance %s lists %+v", name, p.Entries)
		}
	}
}
