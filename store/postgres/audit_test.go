package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/internal/pgtest"
	"github.com/caddy-air/caddy-air/store"
)

// TestAuditAppendOnly checks that the audit table refuses updates and
// deletes even from SQL written by hand, so that no client of the
// database rewrites the trail.
func TestAuditAppendOnly(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, Options{DSN: pgtest.DSN(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	a := &Audit{db: db}
	e := store.AuditEntry{ID: "x1", Time: time.Now().UTC(), Actor: "admin-api", Via: "admin-api", Action: "key.revoke", TargetType: "key", TargetID: "k1"}
	if err := a.Append(ctx, e); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{`UPDATE air_audit SET actor = 'mallory'`, `DELETE FROM air_audit`} {
		if _, err := db.pool.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused as append-only", sql, err)
		}
	}
	var actor string
	if err := db.pool.QueryRow(ctx, `SELECT actor FROM air_audit WHERE id = 'x1'`).Scan(&actor); err != nil || actor != "admin-api" {
		t.Errorf("the entry after the refused changes: %q, %v", actor, err)
	}
}
