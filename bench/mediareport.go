package main

import (
	"fmt"
	"strings"
)

// Scenario 7's targets, from issue #22.
const (
	maxDownloadGrowth = 20 // MiB of RSS growth during the concurrent downloads
	maxRehostGrowth   = 16 // MiB added by re-hosting one file, during and after
)

// downloadGrowth returns the median, over runs, of the RSS growth from
// just before the downloads to the peak during them, in MiB.
func downloadGrowth(runs []run) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, mib(r.PeakRSS-r.IdleRSS))
	}
	return median(xs)
}

// rehostGrowth returns the medians, in MiB, of what re-hosting added to
// RSS at its peak and after it.
func rehostGrowth(rs []rehostRun) (before, peak, after float64) {
	var b, p, a []float64
	for _, r := range rs {
		b = append(b, mib(r.Before))
		p = append(p, mib(r.Peak-r.Before))
		a = append(a, mib(r.After-r.Before))
	}
	return median(b), median(p), median(a)
}

// mediaTable renders scenario 7's memory figures and range checks.
func mediaTable(sc *scenario) string {
	m := sc.Media
	var b strings.Builder
	fmt.Fprintf(&b, "\nScenario 7, memory of %d concurrent downloads of a %d MiB file (medians; RSS just before the downloads, peak during them):\n\n",
		m.Concurrency, m.Size>>20)
	b.WriteString("| Target | RSS before MiB | peak RSS MiB | growth MiB | `Range: bytes=0-1023` |\n|---|--:|--:|--:|---|\n")
	for _, label := range []string{bareLabel, airLabel} {
		s := summarize(sc.Runs[label])
		rng := "206, the first 1,024 bytes"
		if e, ok := m.RangeErr[label]; !ok {
			rng = "not checked"
		} else if e != "" {
			rng = e
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", label, f(mib(int64(s.IdleRSS)), 1), f(s.PeakRSS, 1),
			f(downloadGrowth(sc.Runs[label]), 1), rng)
	}
	before, peak, after := rehostGrowth(m.Rehosts)
	fmt.Fprintf(&b, "\nRe-hosting the file (a video task of the mock provider, streamed into caddy-air's media store), medians of %d: "+
		"RSS %s MiB before, **+%s MiB** at the peak until 2 s after the task succeeded, **+%s MiB** after.\n",
		len(m.Rehosts), f(before, 1), f(peak, 1), f(after, 1))
	return b.String()
}

// mediaVerdicts checks scenario 7's memory and range targets.
func mediaVerdicts(sc *scenario, check func(bool) string) string {
	m := sc.Media
	var b strings.Builder
	g := downloadGrowth(sc.Runs[airLabel])
	fmt.Fprintf(&b, "- Scenario 7 RSS growth during %d concurrent downloads: %s MiB (target ≤ %d MiB): %s\n",
		m.Concurrency, f(g, 1), maxDownloadGrowth, check(g <= maxDownloadGrowth))
	e, ok := m.RangeErr[airLabel]
	fmt.Fprintf(&b, "- Scenario 7 `Range: bytes=0-1023` gives 206 with exactly 1,024 bytes: %s\n", check(ok && e == ""))
	_, peak, after := rehostGrowth(m.Rehosts)
	fmt.Fprintf(&b, "- Scenario 7 re-hosting adds %s MiB during, %s MiB after (target ≤ %d MiB): %s\n",
		f(peak, 1), f(after, 1), maxRehostGrowth, check(peak <= maxRehostGrowth && after <= maxRehostGrowth))
	return b.String()
}
