package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

// newLog returns a Log on an on-disk Badger store, with a clock that
// advances a second per entry.
func newLog(t *testing.T) *Log {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	l := New(badger.NewAudit(db))
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	l.Now = func() time.Time { now = now.Add(time.Second); return now }
	return l
}

func TestRecordCarriesActorAndRedacts(t *testing.T) {
	l := newLog(t)
	ctx := WithActor(context.Background(), Actor{Name: "alice", Via: ViaConsole, ClientIP: "192.0.2.7"})
	secret := "sk-air-abcdefghijklmnop1234"
	err := l.Record(ctx, Entry{Action: "key.create", TargetType: "key", TargetID: "k1",
		After: map[string]any{"id": "k1", "key": secret, "name": "mine " + secret, "nested": []any{map[string]any{"Hash": "deadbeef", "client_secret": "cs-1", "DB_Password": "pw-1", "max_output_tokens": 5}},
			"base_url": "https://u:pw-2@up.example/v1?api-key=q-1#frag"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := l.List(context.Background(), Query{})
	if err != nil || len(p.Entries) != 1 {
		t.Fatalf("list: %v, %v", p, err)
	}
	e := p.Entries[0]
	if e.Actor != "alice" || e.Via != ViaConsole || e.ClientIP != "192.0.2.7" || e.Action != "key.create" || e.TargetID != "k1" || e.Before != nil {
		t.Errorf("entry: %+v", e)
	}
	for _, secret := range []string{"sk-air", "deadbeef", "cs-1", "pw-1", "pw-2", "q-1", "frag"} {
		if bytes.Contains(e.After, []byte(secret)) {
			t.Errorf("secret %q was stored: %s", secret, e.After)
		}
	}
	if !bytes.Contains(e.After, []byte(`"max_output_tokens":5`)) || !bytes.Contains(e.After, []byte(`"base_url":"https://up.example/v1"`)) {
		t.Errorf("a value that is no secret was changed: %s", e.After)
	}
	var after map[string]any
	if err := json.Unmarshal(e.After, &after); err != nil || after["id"] != "k1" || after["key"] != Redacted || after["name"] != "mine "+Redacted {
		t.Errorf("after: %s (%v)", e.After, err)
	}
}

func TestRecordWithoutActor(t *testing.T) {
	l := newLog(t)
	if err := l.Record(context.Background(), Entry{Action: "budget.delete", TargetType: "user", TargetID: "bob"}); err != nil {
		t.Fatal(err)
	}
	p, _ := l.List(context.Background(), Query{})
	if len(p.Entries) != 1 || p.Entries[0].Actor != "unknown" {
		t.Errorf("an entry without an actor: %+v", p.Entries)
	}
	var nilLog *Log
	if err := nilLog.Record(context.Background(), Entry{}); err != nil {
		t.Errorf("a nil log: %v", err)
	}
}

func TestListPagesAndExports(t *testing.T) {
	l := newLog(t)
	ctx := WithActor(context.Background(), Actor{Name: "admin-api", Via: ViaAdminAPI})
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		if err := l.Record(ctx, Entry{Action: "key.revoke", TargetType: "key", TargetID: id, Before: map[string]string{"name": "x,\"y\""}}); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	q := Query{Limit: 2}
	for range 5 {
		p, err := l.List(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Entries {
			seen = append(seen, e.TargetID)
		}
		if p.Next == "" {
			break
		}
		q.Before = p.Next
	}
	if strings.Join(seen, "") != "edcba" {
		t.Errorf("paged: %v, want every entry once, newest first", seen)
	}
	var csv, jl bytes.Buffer
	if err := l.Export(context.Background(), store.AuditQuery{TargetID: "c"}, FormatCSV, &csv); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csv.String()), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "time,actor,") ||
		!strings.Contains(lines[1], `,admin-api,,admin-api,,key.revoke,key,c,"{""name"":""x,\""y\""""}",,`) {
		t.Errorf("csv:\n%s", csv.String())
	}
	if err := l.Export(context.Background(), store.AuditQuery{}, FormatJSONL, &jl); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(jl.String()), "\n")
	var first JSONEntry
	if len(lines) != 5 || json.Unmarshal([]byte(lines[0]), &first) != nil || first.TargetID != "e" || string(first.Before) != `{"name":"x,\"y\""}` {
		t.Errorf("jsonl: %d lines, first %s", len(lines), lines[0])
	}
	if err := l.Export(context.Background(), store.AuditQuery{}, "xml", &jl); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// TestRedactCloudCredentials checks the credentials of the cloud
// providers' settings (a Bedrock session token, an OAuth2 token, a
// PostgreSQL DSN with its password) never reach the audit trail, while
// token counts stay readable.
func TestRedactCloudCredentials(t *testing.T) {
	in := map[string]any{"dialect": map[string]any{"protocol": "bedrock", "access_key_id": "AKIDEXAMPLE",
		"secret_access_key": "wJalrXUtnFEMI", "session_token": "FwoGZXIvYXdzEJr"},
		"storage":    map[string]any{"backend": "postgres", "dsn": "postgres://air:hunter2@db/air"},
		"oauth":      map[string]any{"Access_Token": "ya29.abc", "refresh_token": "1//0g"},
		"max_tokens": 512, "token_url": "https://oauth2.example/token"}
	b, err := Redact(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"wJalrXUtnFEMI", "FwoGZXIvYXdzEJr", "hunter2", "ya29.abc", "1//0g"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("audit entry holds the secret %q: %s", secret, b)
		}
	}
	for _, kept := range []string{`"max_tokens":512`, `"access_key_id":"AKIDEXAMPLE"`, `"token_url":"https://oauth2.example/token"`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("audit entry lost %s: %s", kept, b)
		}
	}
}
