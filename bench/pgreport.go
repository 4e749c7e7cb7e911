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
	"PostgreSQL cluster (scripts/pg.sh, loopback, fsync and synchronous_commit on) with one instance and with two sharing the load evenly; " +
	"gateway CPU is the sum over the instances, PostgreSQL CPU that of the postmaster and all its children (exited ones through cutime/cstime)."

// pgSummary is the medians of a pg target's runs, with the spread of
// the gateway's CPU per request over the rounds.
type pgSummary struct {
	summary
	CPUMin, CPUMax float64 // µs per request
	PG             float64 // µs per request, median
}

func summarizePG(runs []pgRun) pgSummary {
	plain := make([]run, len(runs))
	var cpu, pg []float64
	for i, r := range runs {
		plain[i] = r.run
		cpu = append(cpu, r.CPUPerRequest())
		pg = append(pg, r.PGPerRequest())
	}
	s := pgSummary{summary: summarize(plain), PG: median(pg)}
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
	var b strings.Builder
	b.WriteString("| Load | Target | req/s | p50 ms | p99 ms | gateway CPU µs/req (min–max) | × bare (same count of processes) | PostgreSQL CPU µs/req | gateway + PostgreSQL µs/req | peak RSS MiB (largest instance) | errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
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
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s (%s–%s) | %s | %s | %s | %s | %d |\n",
				sc.Title, label, f(s.RPS, 0), f(s.P50, 2), f(s.P99, 2),
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
	if label == pgTwoLabel {
		if _, ok := sc.Runs[bareTwoLabel]; ok {
			return bareTwoLabel
		}
	}
	return bareLabel
}

// onPG reports whether the target labelled label runs on PostgreSQL.
func onPG(label string) bool { return label == pgOneLabel || label == pgTwoLabel }

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
