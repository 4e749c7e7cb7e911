package keys

import (
	"context"
	"testing"
)

// BenchmarkAuthenticate is a cached key's authentication, the per-request
// cost of air_auth's lookup, with the client address check of a key
// without and with an allow-list.
func BenchmarkAuthenticate(b *testing.B) {
	for _, tc := range []struct {
		name  string
		allow []string
	}{{"no_allow_list", nil}, {"allow_list_4", []string{"10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32", "203.0.113.7"}}} {
		b.Run(tc.name, func(b *testing.B) {
			s, _ := newTestService(b)
			ctx := context.Background()
			secret, _, err := s.Create(ctx, CreateOptions{User: "bench", AllowIPs: tc.allow})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				k, err := s.Authenticate(ctx, secret)
				if err != nil || !k.AllowsIP("2001:db8::5") && len(tc.allow) > 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
