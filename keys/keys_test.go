package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/store/badger"
)

func newTestService(t testing.TB) (*Service, *badger.DB) {
	t.Helper()
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return NewService(context.Background(), badger.NewKeys(db)), db
}

func TestCreateAuthenticate(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	secret, k, err := s.Create(ctx, CreateOptions{User: "alice", Name: "laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, Prefix) || len(secret)-len(Prefix) < 32 {
		t.Fatalf("secret %q: want sk-air- and at least 32 characters", secret)
	}
	got, err := s.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != k.ID || got.User != "alice" || got.Name != "laptop" {
		t.Fatalf("authenticated %+v, want %+v", got, k)
	}
	// A fresh service (empty cache, as after a restart) finds it in the store.
	s2 := NewService(context.Background(), s.store)
	if _, err := s2.Authenticate(ctx, secret); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	other, _, _ := s.Create(ctx, CreateOptions{User: "alice"})
	if other == secret {
		t.Fatal("two keys share a secret")
	}
}

func TestAuthenticateRejects(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	expired, k, err := s.Create(ctx, CreateOptions{User: "bob", ExpiresAt: ptr(time.Now().Add(time.Hour))})
	if err != nil {
		t.Fatal(err)
	}
	s.now = func() time.Time { return k.ExpiresAt.Add(time.Second) }
	valid := Prefix + strings.Repeat("A", 43)
	for i, tc := range []struct {
		secret string
		want   error
	}{
		{"", ErrMissing},
		{"sk-other-abc", ErrMalformed},
		{Prefix + "short", ErrMalformed},
		{Prefix + strings.Repeat("!", 43), ErrMalformed},
		{valid, ErrUnknown},
		{expired, ErrExpired},
	} {
		if _, err := s.Authenticate(ctx, tc.secret); !errors.Is(err, tc.want) {
			t.Errorf("Test %d: Authenticate(%q) = %v, want %v", i, tc.secret, err, tc.want)
		}
	}
}

func TestRevokeTakesEffectAtOnce(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	secret, k, _ := s.Create(ctx, CreateOptions{User: "carol"})
	if _, err := s.Authenticate(ctx, secret); err != nil { // warms the cache
		t.Fatal(err)
	}
	if _, err := s.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after revoke: %v, want ErrRevoked", err)
	}
	if _, err := s.Revoke(ctx, "key_nope"); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("revoke unknown: %v", err)
	}
}

func TestListByUser(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	for _, u := range []string{"a", "b", "a"} {
		if _, _, err := s.Create(ctx, CreateOptions{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	for i, tc := range []struct {
		user string
		want int
	}{{"a", 2}, {"b", 1}, {"", 3}, {"z", 0}} {
		got, err := s.List(ctx, tc.user)
		if err != nil || len(got) != tc.want {
			t.Errorf("Test %d: List(%q) = %d keys, %v; want %d", i, tc.user, len(got), err, tc.want)
		}
	}
}

// TestNoPlaintextInStore reads every raw byte Badger holds, value log
// included, and checks that no secret (or its random part) is there.
func TestNoPlaintextInStore(t *testing.T) {
	s, db := newTestService(t)
	ctx := context.Background()
	var secrets []string
	for i := 0; i < 5; i++ {
		secret, _, err := s.Create(ctx, CreateOptions{User: "dave"})
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, secret)
	}
	var raw bytes.Buffer
	if _, err := db.Badger().Backup(&raw, 0); err != nil {
		t.Fatal(err)
	}
	if raw.Len() == 0 {
		t.Fatal("backup is empty: the test would prove nothing")
	}
	for _, secret := range secrets {
		if bytes.Contains(raw.Bytes(), []byte(secret[len(Prefix):])) {
			t.Fatalf("store holds plaintext of %s…", secret[:10])
		}
		if !bytes.Contains(raw.Bytes(), []byte(Hash(secret))) {
			t.Fatal("store does not hold the key hash: the scan does not see the data")
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestRevocationReachesOtherServices: a key cached by one Service is
// rejected by it at once when another Service on the same repository
// revokes it (store.Keys.Revocations), as instances sharing a backend.
func TestRevocationReachesOtherServices(t *testing.T) {
	a, _ := newTestService(t)
	ctx := context.Background()
	b := NewService(ctx, a.store)
	secret, k, err := a.Create(ctx, CreateOptions{User: "dora"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); err != nil {
		t.Fatal(err) // now cached by b
	}
	if _, err := a.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Authenticate(ctx, secret); !errors.Is(err, ErrRevoked) {
		t.Fatalf("b after a revoked: %v, want ErrRevoked", err)
	}
}

// countingKeys counts the store reads by hash.
type countingKeys struct {
	store.Keys
	reads int
}

func (c *countingKeys) ByHash(ctx context.Context, h string) (store.Key, error) {
	c.reads++
	return c.Keys.ByHash(ctx, h)
}

// TestUnknownSecretsAreRemembered: a client repeating an unknown secret
// costs one store read per missTTL, not one per request, and a flood of
// distinct unknown secrets keeps at most maxMisses in memory.
func TestUnknownSecretsAreRemembered(t *testing.T) {
	db, err := badger.Open(badger.Options{Dir: t.TempDir(), GCInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ck := &countingKeys{Keys: badger.NewKeys(db)}
	s := NewService(context.Background(), ck)
	now := time.Now()
	s.now = func() time.Time { return now }
	ctx := context.Background()
	unknown := Prefix + strings.Repeat("B", 43)
	for range 5 {
		if _, err := s.Authenticate(ctx, unknown); !errors.Is(err, ErrUnknown) {
			t.Fatalf("Authenticate(unknown) = %v, want ErrUnknown", err)
		}
	}
	if ck.reads != 1 {
		t.Errorf("%d store reads for 5 tries of one unknown secret, want 1", ck.reads)
	}
	now = now.Add(missTTL)
	if _, err := s.Authenticate(ctx, unknown); !errors.Is(err, ErrUnknown) {
		t.Fatalf("Authenticate(unknown) after missTTL = %v", err)
	}
	if ck.reads != 2 {
		t.Errorf("%d store reads after missTTL, want 2 (the miss is read again)", ck.reads)
	}
	for i := range maxMisses + 100 {
		secret := fmt.Sprintf("%s%043d", Prefix, i)
		if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrUnknown) {
			t.Fatalf("Authenticate(%q) = %v, want ErrUnknown", secret, err)
		}
	}
	if n := len(s.misses); n > maxMisses {
		t.Errorf("%d misses remembered after a flood, want at most %d", n, maxMisses)
	}
	secret, _, err := s.Create(ctx, CreateOptions{User: "carol"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Errorf("a new key after the flood: %v", err)
	}
}
