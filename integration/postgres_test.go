package integration

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/caddy-air/caddy-air/internal/pgtest"
)

// TestPostgresChatBilled runs the gateway on `storage postgres` (a fresh
// database on the throwaway cluster, the DSN given through an environment
// placeholder) and checks that a chat request is billed in PostgreSQL:
// the key is in air_keys, and by the time the client has the whole answer
// the record is committed in air_ledger, with its aggregate and spend.
func TestPostgresChatBilled(t *testing.T) {
	dsn := pgtest.DSN(t)
	t.Setenv("AIR_TEST_GATEWAY_PG_DSN", dsn)
	up := cannedUpstream(t)
	o := recOptions(up)
	o.Prices = chatPrices
	o.Storage = "postgres {env.AIR_TEST_GATEWAY_PG_DSN}"
	startGateway(t, o)
	// Let go of the database before the test drops it: load a Badger
	// config, which closes the PostgreSQL backend.
	defer startGateway(t, recOptions(up))

	key, keyID := createKey(t, "pg-chat")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var user string
	if err := conn.QueryRow(ctx, `SELECT user_name FROM air_keys WHERE id = $1`, keyID).Scan(&user); err != nil || user != "pg-chat" {
		t.Fatalf("the key is not in PostgreSQL: %q %v", user, err)
	}

	status, _, raw := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, raw)
	}
	// No waiting: the answer's last byte waited for the commit.
	var n, input, cost int64
	var outcome string
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(input + cache_read), 0), coalesce(sum(cost), 0), coalesce(max(outcome), '')
		FROM air_ledger WHERE user_name = 'pg-chat' AND key_id = $1`, keyID).Scan(&n, &input, &cost, &outcome)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || input != 120 || cost <= 0 || outcome != "ok" {
		t.Fatalf("ledger in PostgreSQL: %d records, %d prompt tokens, cost %d nanos, outcome %q; want 1, 120, > 0, ok", n, input, cost, outcome)
	}
	var requests, aggCost, spend int64
	if err := conn.QueryRow(ctx, `SELECT requests, cost FROM air_usage WHERE user_name = 'pg-chat'`).Scan(&requests, &aggCost); err != nil || requests != 1 || aggCost != cost {
		t.Errorf("aggregate: %d requests costing %d (%v), want 1 costing %d", requests, aggCost, err, cost)
	}
	if err := conn.QueryRow(ctx, `SELECT amount FROM air_spend WHERE scope = 'user' AND subject = 'pg-chat' AND period = 'total'`).Scan(&spend); err != nil || spend != cost {
		t.Errorf("spend counter %d (%v), want %d", spend, err, cost)
	}
	// The admin API reads the same ledger.
	if recs := waitLedger(t, "pg-chat", 1); recs[0].Usage.Output == 0 {
		t.Errorf("the admin API's record has no output tokens: %+v", recs[0])
	}
}
