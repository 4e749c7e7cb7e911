package billing

import (
	"context"
	"testing"
)

// BenchmarkAdmit measures the admission path of a request: Admit and
// Release against budgets with spend and rate limits on its key and
// user ("key+user", the path before teams) and on its key, user and team,
// with three tags ("key+user+team"): what teams and tags add to a
// request's CPU. No ledger write is timed. Besides the wall time it
// reports cpu-ns/op, the process's CPU time (user and system) per
// request, which other processes on a busy machine inflate less.
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		s    Subject
	}{
		{"key+user", Subject{User: "alice", KeyID: "key_1"}},
		{"key+user+team", Subject{User: "alice", KeyID: "key_1", Team: "search", Tags: []string{"proj:x", "env:prod", "batch"}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			te := newTestEngine(b)
			lim := Limits{Currency: "CNY", Monthly: 1 << 62, RPM: 1 << 39, TPM: 1 << 39}
			for _, sub := range []struct {
				scope Scope
				id    string
			}{{ScopeKey, "key_1"}, {ScopeUser, "alice"}, {ScopeTeam, "search"}} {
				if sub.scope == ScopeTeam && tc.s.Team == "" {
					continue
				}
				if err := te.Budgets().SetLimits(ctx, sub.scope, sub.id, lim); err != nil {
					b.Fatal(err)
				}
			}
			u := Usage{Input: 50_000, CacheRead: 1_000, Output: 2_000}
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				res, aerr := te.Admit(ctx, tc.s, "qwen3-max", u)
				if aerr != nil {
					b.Fatal(aerr)
				}
				res.Release()
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
