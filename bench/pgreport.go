package main

import (
	"fmt"
	"slices"
	"strings"
)

// maxPGCPURatio is the target for a gateway instance on
// PostgreSQL: its CPU per request at most 1.3× bare Caddy's.
const maxPGCPURatio = 1.30

// pgParams describes scenario pg in the parameters line.
const pgParams = "scenarios 1 and 2's loads (same rates, durations and rounds) against bare Caddy, caddy-air on Badger, and caddy-air on a throwaway " +
	"PostgreSQL cluster (scripts/pg.sh, loopback, fsync and synchronous_commit on) with one instance and with -pg-instances sharing the load evenly (compared with as many bare Caddy processes); " +
	"gateway CPU is the sum over the instances, PostgreSQL CPU that of the postmaster and all its children (exited ones through cutime/cstime); " +
	"+p50 / +p99 is the latency added to the baseline, first byte the time to a stream's first body byte (its first event)."

// pgSummary is the medians of a pg target's runs, with the spread of
// the gateway's CPU per request over the rounds.
type pgSummary struct {
	summary
	CPUMin, CPUMax float64 // µs per request
	PG             float64 // µs per request, median
	// FirstP50 and FirstP99 are the medians of the rounds' percentiles
	// of the time to a stream's first byte, in ms (0: not a stream).
	FirstP50, FirstP99 float64
}

func summarizePG(runs []pgRun) pgSummary {
	plain := make([]run, len(runs))
	var cpu, pg, fb50, fb99 []float64
	for i, r := range runs {
		plain[i] = r.run
		cpu = append(cpu, r.CPUPerRequest())
		pg = append(pg, r.PGPerRequest())
		fb50 = append(fb50, ms(percentile(r.FirstBytes, 0.5)))
		fb99 = append(fb99, ms(percentile(r.FirstBytes, 0.99)))
	}
	s := pgSummary{summary: summarize(plain), PG: median(pg), FirstP50: median(fb50), FirstP99: median(fb99)}
	if len(cpu) > 0 {
		s.CPUMin, s.CPUMax = slices.Min(cpu), slices.Max(cpu)
	}
	return s
}

// pgTable renders scenario pg's results as Markdown: per load and
// target, the medians over the rounds (the gateway's CPU per request
// also with its range), and the ratio of the gateway's CPU per request
// to bare Caddy's.
func pgTable(scenarios []*pgScenario) string {
	if len(scenarios) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| Load | Target | req/s | p50 ms | p99 ms | +p50 / +p99 ms | first byte p50 / p99 ms | gateway CPU µs/req (min–max) | × bare (same count of processes) | PostgreSQL CPU µs/req | gateway + PostgreSQL µs/req | peak RSS MiB (largest instance) | errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, sc := range scenarios {
		for _, label := range sc.Labels {
			s := summarizePG(sc.Runs[label])
			bare := summarizePG(sc.Runs[baselineOf(sc, label)])
			// For the targets not on PostgreSQL, its CPU is what it did
			// in the background (autovacuum, the idle instances'
			// heartbeats): the noise in the other rows' figure.
			pgCPU, sum := f(s.PG, 0), f(s.CPU+s.PG, 0)
			if !onPG(label) {
				pgCPU, sum = "("+pgCPU+")", "–"
			}
			added, first := "", "–"
			if label != baselineOf(sc, label) {
				added = fmt.Sprintf("%+.2f / %+.2f", s.P50-bare.P50, s.P99-bare.P99)
			}
			if s.FirstP50 > 0 {
				first = f(s.FirstP50, 2) + " / " + f(s.FirstP99, 2)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s (%s–%s) | %s | %s | %s | %s | %d |\n",
				sc.Title, label, f(s.RPS, 0), f(s.P50, 2), f(s.P99, 2), added, first,
				f(s.CPU, 0), f(s.CPUMin, 0), f(s.CPUMax, 0), f(ratio(s.CPU, bare.CPU), 2),
				pgCPU, sum, f(s.PeakRSS, 1), s.Errors)
		}
	}
	return b.String()
}

// baselineOf returns the label of the bare Caddy target that label is
// compared with: two bare processes for two instances (when the run had
// them), one otherwise (two bare processes too: their row shows what
// splitting the load costs bare Caddy).
func baselineOf(sc *pgScenario, label string) string {
	var n int
	if _, err := fmt.Sscanf(strings.TrimPrefix(label, pgPrefix), "%d instances", &n); err == nil && onPG(label) && n > 1 {
		if _, ok := sc.Runs[bareManyLabel(n)]; ok {
			return bareManyLabel(n)
		}
	}
	return bareLabel
}

// onPG reports whether the target labelled label runs on PostgreSQL.
func onPG(label string) bool { return strings.HasPrefix(label, pgPrefix) }

// pgVerdicts checks scenario pg against the target: each gateway
// instance on PostgreSQL within 1.3× bare Caddy's CPU per request.
func pgVerdicts(scenarios []*pgScenario) string {
	var b strings.Builder
	check := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "**MISS**"
	}
	errs := 0
	for _, sc := range scenarios {
		for _, label := range sc.Labels {
			s := summarizePG(sc.Runs[label])
			bare := summarizePG(sc.Runs[baselineOf(sc, label)])
			errs += s.Errors
			if s.Errors > 0 {
				fmt.Fprintf(&b, "  - %s, %s: %d errors, first: %s\n", sc.Title, label, s.Errors, s.FirstError)
			}
			if !onPG(label) {
				continue
			}
			r := ratio(s.CPU, bare.CPU)
			fmt.Fprintf(&b, "- %s, %s: gateway CPU/req %s× %s (target ≤ %.2f×): %s\n", sc.Title, label, f(r, 2), baselineOf(sc, label), maxPGCPURatio, check(r <= maxPGCPURatio))
		}
	}
	fmt.Fprintf(&b, "- Scenario pg errors: %d (target 0): %s\n", errs, check(errs == 0))
	return b.String()
}
