package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/shopspring/decimal"

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
	// No waiting: the answer's last byte waited for the commit of its
	// record, in the journal (ledger_durability journaled, the default:
	// over its intent, until the next sync writes the ledger) or in the
	// ledger.
	var durable int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM air_ledger WHERE key_id = $1) +
		(SELECT count(*) FROM air_intents WHERE record ? 'Journaled' AND record->>'KeyID' = $1
			AND NOT EXISTS (SELECT 1 FROM air_ledger l WHERE l.id = air_intents.id))`, keyID).Scan(&durable); err != nil {
		t.Fatal(err)
	}
	if durable != 1 {
		t.Fatalf("%d records of the answer in PostgreSQL (journal or ledger) at its last byte, want 1", durable)
	}
	// A report flushes the ledger: the record and its counts are in.
	var report struct{}
	if status := adminGet(t, adminAddr, "/air/usage?user=pg-chat", &report); status != http.StatusOK {
		t.Fatalf("usage: status %d", status)
	}
	var n, input, cost, duration int64
	var outcome string
	err = conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(input + cache_read), 0), coalesce(sum(cost), 0), coalesce(max(outcome), ''),
		coalesce(max(duration_ms), 0)
		FROM air_ledger WHERE user_name = 'pg-chat' AND key_id = $1`, keyID).Scan(&n, &input, &cost, &outcome, &duration)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || input != 120 || cost <= 0 || outcome != "ok" || duration < 1 {
		t.Fatalf("ledger in PostgreSQL: %d records, %d prompt tokens, cost %d nanos, outcome %q, %d ms; want 1, 120, > 0, ok, >= 1 ms",
			n, input, cost, outcome, duration)
	}
	var requests, aggCost, spend int64
	if err := conn.QueryRow(ctx, `SELECT requests, cost FROM air_usage WHERE user_name = 'pg-chat'`).Scan(&requests, &aggCost); err != nil || requests != 1 || aggCost != cost {
		t.Errorf("aggregate: %d requests costing %d (%v), want 1 costing %d", requests, aggCost, err, cost)
	}
	if err := conn.QueryRow(ctx, `SELECT amount FROM air_spend WHERE scope = 'user' AND subject = 'pg-chat' AND period = 'total'`).Scan(&spend); err != nil || spend != cost {
		t.Errorf("spend counter %d (%v), want %d", spend, err, cost)
	}
	// The admin API reads the same ledger.
	if recs := waitLedger(t, "pg-chat", 1); recs[0].Usage.Output == 0 || recs[0].DurationMillis != duration {
		t.Errorf("the admin API's record has no output tokens or another duration than %d ms: %+v", duration, recs[0])
	}
}

// TestPostgresProcessKeepsTheDSNSecret runs a gateway process at debug
// level on `storage postgres` with the DSN (password included) written
// literally in the Caddyfile, migrates with `caddy air migrate` first, and
// checks that chat requests are billed in PostgreSQL, before and after a
// reload, and that the password appears nowhere in the output of either
// command.
func TestPostgresProcessKeepsTheDSNSecret(t *testing.T) {
	const password = "hunter2-pg-secret"
	u, err := url.Parse(pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password) // the cluster trusts loopback: any password works
	dsn := u.String()
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, "")
	src, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "storage badger "+dataDir, fmt.Sprintf("storage postgres %q", dsn), 1)
	text = strings.Replace(text, "\tadmin "+procAdminAddr+"\n", "\tadmin "+procAdminAddr+"\n\tdebug\n", 1)
	if !strings.Contains(text, "storage postgres") || !strings.Contains(text, "\tdebug\n") {
		t.Fatalf("could not rewrite the example's storage line:\n%s", text)
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}

	migrated := caddyCLI(t, "air", "migrate", "--config", cfg, "--adapter", "caddyfile")
	if !strings.Contains(migrated, "applied 00001_schema.sql") {
		t.Fatalf("migrate printed:\n%s", migrated)
	}
	p := startProcess(t, cfg, dataDir)
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "pg-proc", "--config", cfg))
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	if status, body := postStatus(t, p.url("/v1/chat/completions"), key, chat); status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, body)
	}
	// A reload shares the open backend between the old and the new config.
	caddyCLI(t, "reload", "--config", cfg, "--adapter", "caddyfile", "--force")
	if status, body := postStatus(t, p.url("/v1/chat/completions"), key, chat); status != http.StatusOK {
		t.Fatalf("chat after a reload: %d %s", status, body)
	}
	p.stop()

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM air_ledger WHERE user_name = 'pg-proc'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d records in PostgreSQL (%v), want 2", n, err)
	}
	for what, out := range map[string]string{"caddy run": p.log.String(), "caddy air migrate": migrated} {
		if strings.Contains(out, password) {
			t.Errorf("the output of %s holds the DSN's password:\n%s", what, out)
		}
	}
	if !strings.Contains(p.log.String(), `"level":"debug"`) && !strings.Contains(p.log.String(), "DEBUG") {
		t.Errorf("the process did not log at debug level; the check proves nothing:\n%.2000s", p.log.String())
	}
}

// postStatus posts a JSON body with key and returns the status and body.
func postStatus(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// Ports of the second gateway process of TestPostgresTwoInstances.
const (
	procHTTPPortB  = "18081"
	procAdminAddrB = "localhost:12020"
)

// twoInstances rewrites the quickstart config cfgA (data in dataA) to
// store on the PostgreSQL database of the environment variable dsnEnv,
// writes a copy for a second process (its own ports and dataB, the mock
// provider of the first: it keeps its videos and responses in memory, so
// work created on one instance may be polled by the other), and starts
// both. It returns them and the second's config.
func twoInstances(t *testing.T, cfgA, dataA, dataB, dsnEnv string) (a, b *process, cfgB string) {
	t.Helper()
	src, err := os.ReadFile(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	textA := strings.Replace(string(src), "storage badger "+dataA, "storage postgres {env."+dsnEnv+"}", 1)
	if !strings.Contains(textA, "storage postgres") {
		t.Fatal("could not rewrite the example's storage line")
	}
	textB := strings.ReplaceAll(textA, procHTTPPort, procHTTPPortB)
	textB = strings.Replace(textB, "admin "+procAdminAddr, "admin "+procAdminAddrB, 1)
	textB = strings.ReplaceAll(textB, "localhost:"+procHTTPPortB+"/mock", "localhost:"+procHTTPPort+"/mock")
	cfgB = cfgA + ".b"
	if err := os.WriteFile(cfgA, []byte(textA), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgB, []byte(textB), 0o600); err != nil {
		t.Fatal(err)
	}
	a = startProcessAt(t, procHTTPPort, cfgA, dataA, "/v1/models", http.StatusUnauthorized)
	b = startProcessAt(t, procHTTPPortB, cfgB, dataB, "/v1/models", http.StatusUnauthorized)
	return a, b, cfgB
}

// TestPostgresTwoInstances runs two gateway processes on one PostgreSQL
// database: a key created through one works on the other at once, both
// bill into the one ledger, a video task created on one is seen, served
// and billed once across both, and a revocation through one is refused by
// the other within a second, although the other had the key cached.
func TestPostgresTwoInstances(t *testing.T) {
	t.Setenv("AIR_TEST_TWO_PG_DSN", pgtest.DSN(t))
	dataA, dataB := t.TempDir(), t.TempDir()
	cfgA := quickstartConfig(t, dataA, "")
	a, b, cfgB := twoInstances(t, cfgA, dataA, dataB, "AIR_TEST_TWO_PG_DSN")
	defer a.stop()
	defer b.stop()

	out := caddyCLI(t, "air", "key", "create", "--user", "two", "--config", cfgA)
	key := lastLine(out)
	chat := `{"model":"mock-gpt","messages":[{"role":"user","content":"hi"}]}`
	// Created on A, used on B at once; then on A, which caches it.
	for _, p := range []*process{b, a} {
		if status, body := postStatus(t, p.url("/v1/chat/completions"), key, chat); status != http.StatusOK {
			t.Fatalf("chat on port %s: %d %s", p.port, status, body)
		}
	}
	var usage struct {
		Totals []struct {
			Requests int64 `json:"requests"`
		} `json:"totals"`
	}
	// In ledger_durability journaled, an instance writes its answers'
	// records to the shared ledger with its next sync, within a commit
	// interval of the answer: another instance's reports see them then.
	// A's own report flushes A's ledger; then B's must count both.
	var own struct{}
	if status := adminGet(t, procAdminAddr, "/air/usage?user=two", &own); status != http.StatusOK {
		t.Fatalf("usage through A: status %d", status)
	}
	status := adminGet(t, procAdminAddrB, "/air/usage?user=two", &usage)
	var requests int64
	for _, tot := range usage.Totals {
		requests += tot.Requests
	}
	if status != http.StatusOK || requests != 2 {
		t.Errorf("usage through B: status %d, %d requests; want both instances' 2", status, requests)
	}

	// A video task created on A is queried on B, polled by whichever
	// instance claims it, re-hosted in PostgreSQL, served by both, and
	// billed once.
	status, _, raw := callURL(t, http.MethodPost, a.url("/v1/tasks"), key, `{"model":"mock-video","prompt":"waves","seconds":"4"}`)
	var task taskView
	if err := json.Unmarshal(raw, &task); status != http.StatusAccepted || err != nil {
		t.Fatalf("create on A: %d %s", status, raw)
	}
	eventually(t, 60*time.Second, "the video task succeeds, seen from B", func() bool {
		_, _, raw := callURL(t, http.MethodGet, b.url("/v1/tasks/"+task.ID), key, "")
		task = taskView{}
		_ = json.Unmarshal(raw, &task)
		if task.Status == "failed" {
			t.Fatalf("the task failed: %s", raw)
		}
		return task.Status == "succeeded"
	})
	if task.Output == nil || task.Output.VideoURL == "" {
		t.Fatalf("no video: %+v", task)
	}
	mediaPath := task.Output.VideoURL[strings.Index(task.Output.VideoURL, "/media/"):]
	var sizes []int
	for _, p := range []*process{a, b} {
		status, ctype, data := fetchMedia(t, p.url(mediaPath))
		if status != http.StatusOK || ctype != "video/mp4" || len(data) == 0 {
			t.Fatalf("media from port %s: %d %s %d bytes", p.port, status, ctype, len(data))
		}
		sizes = append(sizes, len(data))
	}
	if sizes[0] != sizes[1] {
		t.Errorf("the instances serve %d and %d bytes of one video", sizes[0], sizes[1])
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AIR_TEST_TWO_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	time.Sleep(500 * time.Millisecond) // both pollers had their chance to bill again
	var charges int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM air_ledger WHERE id = $1`, task.ID).Scan(&charges); err != nil || charges != 1 {
		t.Errorf("the task is billed %d times (%v), want once", charges, err)
	}

	id := strings.Fields(strings.Split(caddyCLI(t, "air", "key", "list", "--config", cfgB), "\n")[1])[0]
	caddyCLI(t, "air", "key", "revoke", id, "--config", cfgB)
	revoked := time.Now()
	for {
		status, _ := getStatus(t, a.url("/v1/models"), key)
		if status == http.StatusUnauthorized {
			break
		}
		if time.Since(revoked) > time.Second {
			t.Fatalf("A still accepts the key %v after B revoked it (status %d)", time.Since(revoked), status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPostgresTwoInstancesPollBackground runs two gateway processes on
// one PostgreSQL database, both polling background responses every
// 100 ms: background responses created on both and never retrieved are
// each billed exactly once, at their exact cost, whichever instance's
// poller claimed them.
func TestPostgresTwoInstancesPollBackground(t *testing.T) {
	t.Setenv("AIR_TEST_POLL_PG_DSN", pgtest.DSN(t))
	dataA, dataB := t.TempDir(), t.TempDir()
	cfgA := quickstartConfig(t, dataA, "\t\tresponses {\n\t\t\tpoll_interval 100ms\n\t\t}")
	withPrices(t, cfgA, respPrices)
	a, b, _ := twoInstances(t, cfgA, dataA, dataB, "AIR_TEST_POLL_PG_DSN")
	defer a.stop()
	defer b.stop()
	key := lastLine(caddyCLI(t, "air", "key", "create", "--user", "bg-two", "--config", cfgA))
	mock := openai.NewClient(option.WithBaseURL(a.url("/mock/v1/")), option.WithAPIKey("mock-upstream-key"), option.WithMaxRetries(0))
	var ids []string
	for i := range 10 {
		p := []*process{a, b}[i%2]
		c := openai.NewClient(option.WithBaseURL(p.url("/v1/")), option.WithAPIKey(key), option.WithMaxRetries(0))
		ids = append(ids, createBackground(t, c, "mock-gpt", fmt.Sprintf("two %d", i), time.Duration(300+100*i)*time.Millisecond).ID)
	}
	want := map[string]int{}
	for _, id := range ids {
		want[expect("mock-gpt", upstreamUsage(t, mock, id)).cost.String()]++
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("AIR_TEST_POLL_PG_DSN"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	count := func() (n, distinct int) {
		if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT id) FROM air_ledger WHERE user_name = 'bg-two'`).Scan(&n, &distinct); err != nil {
			t.Fatal(err)
		}
		return n, distinct
	}
	eventually(t, 20*time.Second, "every background response billed", func() bool {
		n, _ := count()
		return n >= len(ids)
	})
	time.Sleep(time.Second) // both pollers had their chance to bill again
	if n, distinct := count(); n != len(ids) || distinct != len(ids) {
		t.Fatalf("%d records (%d ids) for %d background responses, want one each", n, distinct, len(ids))
	}
	for _, rec := range procLedger(t, "bg-two") {
		cost, err := decimal.NewFromString(rec.Cost)
		if err != nil || rec.Outcome != "ok" {
			t.Fatalf("record %+v", rec)
		}
		want[cost.String()]--
	}
	for cost, n := range want {
		if n != 0 {
			t.Errorf("cost %s: %d records more than expected", cost, -n)
		}
	}
}

// adminGet reads a JSON answer of the admin API at addr into out.
func adminGet(t *testing.T, addr, path string, out any) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("decoding %s: %v: %s", path, err, data)
		}
	}
	return resp.StatusCode
}
