package reqlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

func TestCaptureCap(t *testing.T) {
	for _, tc := range []struct {
		writes    []string
		cap       int
		want      string
		truncated bool
	}{
		{[]string{"abc", "def"}, 10, "abcdef", false},
		{[]string{"abc", "def"}, 6, "abcdef", false},
		{[]string{"abc", "def"}, 4, "abcd", true},
		{[]string{"abcdef", "", "gh"}, 3, "abc", true},
		{[]string{"abc", "d"}, 3, "abc", true},
		{nil, 3, "", false},
	} {
		c := NewCapture(tc.cap)
		for _, w := range tc.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Errorf("Write(%q) = %d, %v: a capture must never short a write", w, n, err)
			}
		}
		if string(c.Bytes()) != tc.want || c.Truncated != tc.truncated || cap(c.Bytes()) > 2*tc.cap+8 {
			t.Errorf("%q cap %d: %q truncated %v (cap %d), want %q %v", tc.writes, tc.cap, c.Bytes(), c.Truncated, cap(c.Bytes()), tc.want, tc.truncated)
		}
	}
	var off *Capture // request logging off
	if n, err := off.Write([]byte("x")); n != 1 || err != nil || off.Bytes() != nil {
		t.Error("a nil capture must take writes and keep nothing")
	}
}

func TestRedact(t *testing.T) {
	r, err := NewRedactor(`\b\d{3}-\d{2}-\d{4}\b`)
	if err != nil {
		t.Fatal(err)
	}
	in := `{"messages":[{"content":"my key is sk-air-AbCdEf0123456789 and sk-proj-xyz_12345678, ssn 123-45-6789, auth Bearer eyJhbGciOiJIUzI1NiJ9.x"}]}`
	got := string(r.Redact([]byte(in)))
	for _, secret := range []string{"sk-air-", "sk-proj", "123-45-6789", "eyJhbGci"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q left in %s", secret, got)
		}
	}
	if strings.Count(got, Redacted) != 4 || !strings.Contains(got, `"messages":[{"content":"my key is `) {
		t.Errorf("redacted: %s", got)
	}
	if _, err := NewRedactor(`(`); err == nil {
		t.Error("a bad pattern was accepted")
	}
}

func TestReassemble(t *testing.T) {
	openai := "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	if got := string(Reassemble([]byte(openai))); got != `{"content":"Hello","finish_reason":"stop","model":"m","stream":true,"usage":{"prompt_tokens":3,"completion_tokens":2}}` {
		t.Errorf("OpenAI stream: %s", got)
	}
	anthropic := "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"c\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n"
	if got := string(Reassemble([]byte(anthropic))); got != `{"content":"Hi there","finish_reason":"end_turn","stream":true,"usage":{"output_tokens":2}}` {
		t.Errorf("Anthropic stream: %s", got)
	}
	plain := `{"id":"x","choices":[]}`
	if got := string(Reassemble([]byte(plain))); got != plain {
		t.Errorf("a JSON answer was changed: %s", got)
	}
}

// TestStoredExpiresWithoutSecrets stores a redacted log in Badger on
// disk: it reads back before its TTL, is gone after, and no file of the
// store holds the key's secret.
func TestStoredExpiresWithoutSecrets(t *testing.T) {
	dir := t.TempDir()
	db, err := badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	logs := badger.NewRequestLogs(db)
	ctx := context.Background()
	secret := "sk-air-TESTSECRET0123456789abcdef"
	red, _ := NewRedactor()
	req := NewCapture(64)
	_, _ = io.Copy(req, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"use `+secret+` please, and more text past the cap"}]}`))
	l := store.RequestLog{RequestID: "req_1", KeyID: "k1", User: "alice", Time: time.Now().UTC(),
		Request: string(red.Redact(req.Bytes())), RequestTruncated: req.Truncated, Response: string(red.Redact([]byte(`{"echo":"` + secret + `"}`)))}
	if err := logs.Put(ctx, l, time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := logs.Get(ctx, "req_1")
	if err != nil || got.User != "alice" || !got.RequestTruncated || len(got.Request) > 64+len(Redacted) || !strings.Contains(got.Response, Redacted) {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("TESTSECRET")) {
			t.Errorf("%s holds the key's secret", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err = badger.Open(badger.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	logs = badger.NewRequestLogs(db)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := logs.Get(ctx, "req_1")
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log outlived its TTL of 1s: %v", err)
		}
	}
}

// BenchmarkCapture is the cost of request logging when on, per request:
// a 4 KiB request and a 16 KiB answer in 512-byte writes, captured under
// a 64 KiB cap and redacted. BenchmarkCaptureOff is the cost when off
// (a nil capture).
func BenchmarkCapture(b *testing.B) {
	reqBody := bytes.Repeat([]byte(`{"role":"user","content":"hello world"},`), 4096/40)
	answer := bytes.Repeat([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"token \"}}]}\n\n"), 16384/52)
	red, _ := NewRedactor()
	b.ReportAllocs()
	for b.Loop() {
		rq, rs := NewCapture(64<<10), NewCapture(64<<10)
		_, _ = rq.Write(reqBody)
		for p := answer; len(p) > 0; {
			n := min(512, len(p))
			_, _ = rs.Write(p[:n])
			p = p[n:]
		}
		_ = red.Redact(rq.Bytes())
		_ = red.Redact(Reassemble(rs.Bytes()))
	}
}

// BenchmarkCaptureOff is BenchmarkCapture's writes into a nil capture.
func BenchmarkCaptureOff(b *testing.B) {
	answer := bytes.Repeat([]byte("x"), 16384)
	var c *Capture
	b.ReportAllocs()
	for b.Loop() {
		for p := answer; len(p) > 0; {
			n := min(512, len(p))
			_, _ = c.Write(p[:n])
			p = p[n:]
		}
	}
}
