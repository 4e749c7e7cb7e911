package signin

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := New(Config{PerIP: 3, PerUser: 5, Window: time.Minute})

	// One IP: three failures, then it waits for a failure to come back
	// (a minute / 3 = 20 s), whatever user it tries.
	for i := range 3 {
		if w := l.Wait("10.0.0.1", fmt.Sprint("u", i), now); w != 0 {
			t.Fatalf("failure %d already waits %s", i, w)
		}
		l.Failed("10.0.0.1", fmt.Sprint("u", i), now)
	}
	if w := l.Wait("10.0.0.1", "someone", now); w != 20*time.Second {
		t.Errorf("after 3 failures the IP waits %s, want 20s", w)
	}
	if w := l.Wait("10.0.0.2", "someone", now); w != 0 {
		t.Errorf("another IP waits %s", w)
	}
	if w := l.Wait("10.0.0.1", "someone", now.Add(20*time.Second)); w != 0 {
		t.Errorf("20 s later the IP still waits %s", w)
	}

	// One user from many IPs: five failures, then the name waits.
	for i := range 5 {
		l.Failed(fmt.Sprint("192.0.2.", i), "alice", now)
	}
	if w := l.Wait("192.0.2.200", "alice", now); w != 12*time.Second {
		t.Errorf("after 5 failures alice waits %s, want 12s", w)
	}
	if w := l.Wait("192.0.2.200", "bob", now); w != 0 {
		t.Errorf("bob waits %s for alice's failures", w)
	}
	// Waiting requests that fail all the same owe nothing later.
	for range 10 {
		l.Failed("192.0.2.9", "alice", now)
	}
	if w := l.Wait("192.0.2.200", "alice", now.Add(12*time.Second)); w != 0 {
		t.Errorf("alice still waits %s once a failure came back", w)
	}
}

// The tracked keys are bounded: a flood of user names refills nothing it
// should not, and does not grow the map past MaxTracked.
func TestLimiterBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := New(Config{PerIP: 1 << 20, PerUser: 2, MaxTracked: 100})
	for i := range 1000 {
		l.Failed("10.0.0.1", fmt.Sprint("user", i), now)
	}
	if n := len(l.users.m); n > 100 {
		t.Errorf("%d user buckets, want at most 100", n)
	}
	// Once refilled, they make room again.
	l.Failed("10.0.0.1", "late", now.Add(2*time.Minute))
	if n := len(l.users.m); n != 1 {
		t.Errorf("%d user buckets after the others refilled, want 1", n)
	}
}

// BenchmarkBcryptVerify is the CPU of one password check (a failed
// sign-in) at each bcrypt cost: what one request to basic_auth costs.
func BenchmarkBcryptVerify(b *testing.B) {
	for _, cost := range []int{10, 11, 12, 14} {
		hash, err := bcrypt.GenerateFromPassword([]byte("correct horse"), cost)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint("cost=", cost), func(b *testing.B) {
			for b.Loop() {
				_ = bcrypt.CompareHashAndPassword(hash, []byte("wrong horse"))
			}
		})
	}
}
