package keys

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRegenerateGrace: the old secret works during the grace (on a
// service that cached it before the regenerate, and on one that never
// saw it), and is refused with ErrReplaced once the clock passes the
// grace's end; the new one works throughout.
func TestRegenerateGrace(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	old, k, err := s.Create(ctx, CreateOptions{User: "rita"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, old); err != nil { // cached now
		t.Fatal(err)
	}
	now := time.Now()
	s.now = func() time.Time { return now }
	fresh := NewService(ctx, s.store)
	fresh.now = s.now
	secret, rk, err := s.Regenerate(ctx, k.ID, time.Hour)
	if err != nil || secret == old || rk.PreviousSecretUntil == nil || !rk.PreviousSecretUntil.Equal(now.Add(time.Hour).UTC()) {
		t.Fatalf("Regenerate = %q, %+v, %v", secret, rk, err)
	}
	for name, svc := range map[string]*Service{"regenerating": s, "fresh": fresh} {
		for _, sec := range []string{old, secret} {
			if got, err := svc.Authenticate(ctx, sec); err != nil || got.ID != k.ID {
				t.Errorf("%s service, during the grace: %v", name, err)
			}
		}
	}
	now = now.Add(time.Hour)
	for name, svc := range map[string]*Service{"regenerating": s, "fresh": fresh} {
		if _, err := svc.Authenticate(ctx, old); !errors.Is(err, ErrReplaced) {
			t.Errorf("%s service, after the grace: old secret %v, want ErrReplaced", name, err)
		}
		if _, err := svc.Authenticate(ctx, secret); err != nil {
			t.Errorf("%s service, after the grace: new secret %v", name, err)
		}
	}
	// Without a grace the old secret stops at once.
	third, _, err := s.Regenerate(ctx, k.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !errors.Is(err, ErrReplaced) {
		t.Errorf("grace 0: the replaced secret %v, want ErrReplaced", err)
	}
	if _, err := s.Authenticate(ctx, third); err != nil {
		t.Errorf("the third secret: %v", err)
	}
	if _, err := s.Authenticate(ctx, old); !errors.Is(err, ErrUnknown) {
		t.Errorf("the first secret, two regenerates later: %v, want ErrUnknown", err)
	}
	for i, tc := range []struct {
		id    string
		grace time.Duration
		want  error
	}{
		{"key_000000000000", time.Hour, ErrNoSuchKey},
		{k.ID, -time.Second, nil},
		{k.ID, MaxGrace + time.Hour, nil},
	} {
		if _, _, err := s.Regenerate(ctx, tc.id, tc.grace); err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Test %d: Regenerate(%s, %s) = %v, want an error (%v)", i, tc.id, tc.grace, err, tc.want)
		}
	}
	if _, err := s.Revoke(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Regenerate(ctx, k.ID, time.Hour); !errors.Is(err, ErrRevoked) {
		t.Errorf("Regenerate of a revoked key = %v, want ErrRevoked", err)
	}
}

func TestAllowIPs(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	_, k, err := s.Create(ctx, CreateOptions{User: "ida", AllowIPs: []string{"10.1.0.0/16", " 192.0.2.7 ", "2001:db8:aa::/48", "10.1.2.3/16", "::ffff:198.51.100.0/120"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.1.0.0/16", "192.0.2.7/32", "2001:db8:aa::/48", "198.51.100.0/24"}
	if len(k.AllowIPs) != len(want) {
		t.Fatalf("allow_ips %v, want %v", k.AllowIPs, want)
	}
	for i := range want {
		if k.AllowIPs[i] != want[i] {
			t.Errorf("allow_ips[%d] = %s, want %s", i, k.AllowIPs[i], want[i])
		}
	}
	listed, _ := s.List(ctx, "ida") // as stored and read back
	for i, tc := range []struct {
		ip   string
		want bool
	}{
		{"10.1.200.3", true},
		{"10.2.0.1", false},
		{"192.0.2.7", true},
		{"192.0.2.8", false},
		{"::ffff:10.1.0.9", true}, // IPv4-mapped
		{"2001:db8:aa:1::5", true},
		{"2001:db8:ab::5", false},
		{"fe80::1%eth0", false},
		{"198.51.100.77", true},
		{"", false},
		{"not-an-ip", false},
	} {
		for _, key := range []*Key{k, listed[0]} {
			if got := key.AllowsIP(tc.ip); got != tc.want {
				t.Errorf("Test %d: AllowsIP(%q) = %v, want %v", i, tc.ip, got, tc.want)
			}
		}
	}
	open := &Key{}
	if !open.AllowsIP("203.0.113.1") || !open.AllowsIP("") {
		t.Error("a key without an allow-list must allow every address")
	}
	for i, bad := range [][]string{{"10.0.0.0/33"}, {"example.com"}, {"fe80::1%eth0"}, {"1.2.3.4/"}} {
		if _, _, err := s.Create(ctx, CreateOptions{User: "ida", AllowIPs: bad}); err == nil {
			t.Errorf("Test %d: Create with allow_ips %v succeeded", i, bad)
		}
	}
	empty := []string{}
	upd, err := s.Update(ctx, k.ID, Change{AllowIPs: &empty})
	if err != nil || len(upd.AllowIPs) != 0 || !upd.AllowsIP("203.0.113.1") {
		t.Errorf("Update clearing the list = %+v, %v", upd, err)
	}
	name := "kept"
	upd, err = s.Update(ctx, k.ID, Change{AllowIPs: &[]string{"203.0.113.0/24"}})
	if err == nil {
		upd, err = s.Update(ctx, k.ID, Change{Name: &name}) // the list stays
	}
	if err != nil || len(upd.AllowIPs) != 1 || upd.AllowsIP("192.0.2.7") || !upd.AllowsIP("203.0.113.9") {
		t.Errorf("Update keeping the list = %+v, %v", upd, err)
	}
}
