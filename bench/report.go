package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
)

// summary is the median of a target's runs in one scenario.
type summary struct {
	RPS, P50, P99, CPU float64 // req/s, ms, ms, µs per request
	PeakRSS, HWM       float64 // MiB
	PeakAnon, PeakFile float64 // MiB
	IdleRSS, OpenRSS   float64 // bytes
	Errors             int     // over all rounds
	FirstError         string
	HWMReset           bool
}

// summarize returns the medians of runs.
func summarize(runs []run) summary {
	var rps, p50, p99, cpu, peak, anon, file, hwm, idle, open []float64
	s := summary{HWMReset: len(runs) > 0}
	for _, r := range runs {
		rps = append(rps, r.RPS())
		p50 = append(p50, ms(percentile(r.Latencies, 0.5)))
		p99 = append(p99, ms(percentile(r.Latencies, 0.99)))
		cpu = append(cpu, r.CPUPerRequest())
		peak = append(peak, mib(r.PeakRSS))
		anon = append(anon, mib(r.PeakAnon))
		file = append(file, mib(r.PeakFile))
		hwm = append(hwm, mib(r.HWM))
		idle = append(idle, float64(r.IdleRSS))
		open = append(open, float64(r.OpenRSS))
		s.Errors += r.Errors
		if s.FirstError == "" {
			s.FirstError = r.FirstError
		}
		s.HWMReset = s.HWMReset && r.HWMReset
	}
	s.RPS, s.P50, s.P99, s.CPU = median(rps), median(p50), median(p99), median(cpu)
	s.PeakRSS, s.HWM = median(peak), median(hwm)
	s.PeakAnon, s.PeakFile = median(anon), median(file)
	s.IdleRSS, s.OpenRSS = median(idle), median(open)
	return s
}

// Labels of the two targets, bare first.
const (
	bareLabel = "bare Caddy"
	airLabel  = "caddy-air"
	// noMetricsLabel is caddy-air with `metrics off` (-metrics-off).
	noMetricsLabel = "caddy-air, metrics off"
	// strictLabel is caddy-air with `ledger_durability strict` (-strict);
	// airLabel runs the default, journaled.
	strictLabel = "caddy-air, strict"
)

// airVariants returns the labels of the caddy-air targets of sc that the
// main table shows: the default, and strict durability when it ran.
func airVariants(sc *scenario) []string {
	out := []string{airLabel}
	if _, ok := sc.Runs[strictLabel]; ok {
		out = append(out, strictLabel)
	}
	return out
}

// minClosedLoopRatio is the least throughput of caddy-air in the default
// durability against bare Caddy in the closed-loop scenarios (issue #30).
const minClosedLoopRatio = 0.9

// closedLoopScenario reports whether scenario id is a closed-loop one.
func closedLoopScenario(id int) bool { return id == 9 || id == 10 }

// The targets.
const (
	maxCPURatio       = 1.15
	maxRSSRatio       = 1.25
	maxStreamOverhead = 64 // KiB per open stream beyond bare Caddy
)

// targets returns the largest ratios to bare Caddy of CPU per request and
// of peak RSS that scenario id may reach; a target of zero means none.
func targets(id int) (cpu, rss float64) {
	switch id {
	case 3:
		return 0, maxRSSRatio
	case 4, 5: // long conversations
		return 1.30, 1.10
	case 6: // long streams
		return 1.00, maxRSSRatio
	case 7: // media downloads: RSS growth is checked instead of a ratio
		return 1.20, 0
	}
	return maxCPURatio, maxRSSRatio
}

// streamOverhead returns, in KiB per stream, what caddy-air's RSS grows by
// per open stream beyond what bare Caddy's grows by, and the raw
// difference of their RSS with all streams open, per stream.
func streamOverhead(bare, air summary, streams int) (delta, raw float64) {
	n := float64(streams) * 1024
	delta = ((air.OpenRSS - air.IdleRSS) - (bare.OpenRSS - bare.IdleRSS)) / n
	raw = (air.OpenRSS - bare.OpenRSS) / n
	return delta, raw
}

// signed formats x with prec decimals and its sign, or "n/a" for NaN.
func signed(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%+.*f", prec, x)
}

// f formats x with prec decimals, or "n/a" for NaN.
func f(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.*f", prec, x)
}

// table renders the results as Markdown. +p50 and +p99 are the latency
// each caddy-air target adds to bare Caddy's (the difference of the
// medians).
func table(scenarios []*scenario) string {
	var b strings.Builder
	b.WriteString("| Scenario | Target | req/s | p50 ms | p99 ms | +p50 ms | +p99 ms | CPU µs/req | peak RSS MiB | VmHWM MiB | errors |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, sc := range scenarios {
		bare := summarize(sc.Runs[bareLabel])
		lat := 2
		if sc.ID == 3 {
			lat = 0
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | | | %s | %s | %s | %d |\n", sc.Title, bareLabel,
			f(bare.RPS, 0), f(bare.P50, lat), f(bare.P99, lat), f(bare.CPU, 0),
			f(bare.PeakRSS, 1), f(bare.HWM, 1), bare.Errors)
		variants := airVariants(sc)
		for _, label := range variants {
			s := summarize(sc.Runs[label])
			fmt.Fprintf(&b, "| | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n", label,
				f(s.RPS, 0), f(s.P50, lat), f(s.P99, lat), signed(s.P50-bare.P50, lat), signed(s.P99-bare.P99, lat),
				f(s.CPU, 0), f(s.PeakRSS, 1), f(s.HWM, 1), s.Errors)
		}
		for _, label := range variants {
			s := summarize(sc.Runs[label])
			name := "**ratio**"
			if len(variants) > 1 {
				name = "**ratio**, " + strings.TrimPrefix(label, "caddy-air, ")
				if label == airLabel {
					name = "**ratio**, journaled"
				}
			}
			fmt.Fprintf(&b, "| | %s | %s | %s | %s | | | **%s** | **%s** | %s | |\n", name,
				f(ratio(s.RPS, bare.RPS), 2), f(ratio(s.P50, bare.P50), 2), f(ratio(s.P99, bare.P99), 2),
				f(ratio(s.CPU, bare.CPU), 2), f(ratio(s.PeakRSS, bare.PeakRSS), 2), f(ratio(s.HWM, bare.HWM), 2))
		}
	}
	b.WriteString(metricsCost(scenarios))
	b.WriteString(peakSplit(scenarios))
	for _, sc := range scenarios {
		if sc.Media != nil {
			b.WriteString(mediaTable(sc))
		}
	}
	for _, sc := range scenarios {
		if sc.ID != 3 {
			continue
		}
		bare, air := summarize(sc.Runs[bareLabel]), summarize(sc.Runs[airLabel])
		delta, raw := streamOverhead(bare, air, sc.Streams)
		fmt.Fprintf(&b, "\nScenario 3, memory with %d streams open (medians; RSS before the first stream / while all are open):\n\n", sc.Streams)
		b.WriteString("| Target | idle RSS MiB | open RSS MiB | growth per stream KiB |\n|---|--:|--:|--:|\n")
		for _, x := range []struct {
			label string
			s     summary
		}{{bareLabel, bare}, {airLabel, air}} {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", x.label, f(mib(int64(x.s.IdleRSS)), 1), f(mib(int64(x.s.OpenRSS)), 1),
				f((x.s.OpenRSS-x.s.IdleRSS)/float64(sc.Streams)/1024, 1))
		}
		fmt.Fprintf(&b, "\nPer open stream beyond bare Caddy: **%s KiB** (growth of caddy-air minus growth of bare Caddy, per stream); "+
			"raw (RSS_air − RSS_bare)/N with all open: %s KiB (includes the fixed difference at idle).\n", f(delta, 1), f(raw, 1))
	}
	return b.String()
}

// peakSplit renders, for the constant-rate scenarios, what the peak RSS of
// each target consists of, and what caddy-air adds.
func peakSplit(scenarios []*scenario) string {
	var b strings.Builder
	for _, sc := range scenarios {
		if sc.ID == 3 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nPeak RSS split (medians, from the sample with the largest RSS): anonymous memory (Go heap, stacks) " +
				"and mapped-file pages (the binary; for caddy-air also Badger's memory-mapped tables and write-ahead log):\n\n" +
				"| Scenario | Target | anon MiB | file MiB |\n|---|---|--:|--:|\n")
		}
		bare, air := summarize(sc.Runs[bareLabel]), summarize(sc.Runs[airLabel])
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", sc.Title, bareLabel, f(bare.PeakAnon, 1), f(bare.PeakFile, 1))
		fmt.Fprintf(&b, "| | %s | %s | %s |\n", airLabel, f(air.PeakAnon, 1), f(air.PeakFile, 1))
		fmt.Fprintf(&b, "| | difference | %+.1f | %+.1f |\n", air.PeakAnon-bare.PeakAnon, air.PeakFile-bare.PeakFile)
	}
	return b.String()
}

// verdicts checks the results against the targets.
func verdicts(scenarios []*scenario) string {
	var b strings.Builder
	check := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "**MISS**"
	}
	errs := 0
	for _, sc := range scenarios {
		bare, air := summarize(sc.Runs[bareLabel]), summarize(sc.Runs[airLabel])
		errs += bare.Errors + air.Errors
		maxCPU, maxRSS := targets(sc.ID)
		if maxCPU > 0 {
			r := ratio(air.CPU, bare.CPU)
			fmt.Fprintf(&b, "- Scenario %d CPU/req: %s× bare (target ≤ %.2f×): %s\n", sc.ID, f(r, 2), maxCPU, check(r <= maxCPU))
		}
		b.WriteString(metricsVerdict(sc))
		if maxRSS > 0 {
			r := ratio(air.PeakRSS, bare.PeakRSS)
			fmt.Fprintf(&b, "- Scenario %d peak RSS: %s× bare (target ≤ %.2f×): %s\n", sc.ID, f(r, 2), maxRSS, check(r <= maxRSS))
		}
		if sc.Media != nil {
			b.WriteString(mediaVerdicts(sc, check))
		}
		if closedLoopScenario(sc.ID) {
			r := ratio(air.RPS, bare.RPS)
			fmt.Fprintf(&b, "- Scenario %d closed-loop throughput: %s× bare (target ≥ %.1f×): %s\n", sc.ID, f(r, 2), minClosedLoopRatio, check(r >= minClosedLoopRatio))
			if st, ok := sc.Runs[strictLabel]; ok {
				s := summarize(st)
				fmt.Fprintf(&b, "  - strict durability: %s× bare, p50 %s ms, p99 %s ms\n", f(ratio(s.RPS, bare.RPS), 2), signed(s.P50-bare.P50, 2), signed(s.P99-bare.P99, 2))
			}
		}
		if sc.ID == 3 {
			delta, _ := streamOverhead(bare, air, sc.Streams)
			fmt.Fprintf(&b, "- Scenario 3 memory per open stream beyond bare: %s KiB (target ≤ %d KiB): %s\n", f(delta, 1), maxStreamOverhead, check(delta <= maxStreamOverhead))
		}
		for _, x := range []struct {
			label string
			s     summary
		}{{bareLabel, bare}, {airLabel, air}} {
			if x.s.Errors > 0 {
				fmt.Fprintf(&b, "  - scenario %d, %s: %d errors, first: %s\n", sc.ID, x.label, x.s.Errors, x.s.FirstError)
			}
		}
	}
	fmt.Fprintf(&b, "- Errors: %d (target 0): %s\n", errs, check(errs == 0))
	return b.String()
}

// machine describes the host and toolchain.
func machine(caddyVersion string) string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		model = cpuModel(b)
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				mem = ", " + strings.TrimSpace(v) + " RAM"
				break
			}
		}
	}
	return fmt.Sprintf("%d × %s%s, %s %s/%s, Caddy %s", runtime.NumCPU(), model, mem,
		runtime.Version(), runtime.GOOS, runtime.GOARCH, caddyVersion)
}

// cpuModel returns the first "model name" of /proc/cpuinfo content.
func cpuModel(cpuinfo []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// maxMetricsCost is the most CPU per request that caddy-air's metrics may
// add (issue #18): 3% over caddy-air with `metrics off`.
const maxMetricsCost = 0.03

// metricsCost renders, when the run had a caddy-air with `metrics off`
// (-metrics-off), what the metrics cost per request.
func metricsCost(scenarios []*scenario) string {
	var b strings.Builder
	for _, sc := range scenarios {
		off, ok := sc.Runs[noMetricsLabel]
		if !ok || sc.ID == 3 {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\nCost of caddy-air's metrics (medians; the same run, -metrics-off):\n\n" +
				"| Scenario | CPU µs/req, metrics on | CPU µs/req, metrics off | cost | p50 ms on / off |\n|---|--:|--:|--:|--:|\n")
		}
		on, o := summarize(sc.Runs[airLabel]), summarize(off)
		fmt.Fprintf(&b, "| %s | %s | %s | %s%% | %s / %s |\n", sc.Title, f(on.CPU, 0), f(o.CPU, 0),
			f(100*(ratio(on.CPU, o.CPU)-1), 1), f(on.P50, 2), f(o.P50, 2))
	}
	return b.String()
}

// metricsVerdict checks the metrics' cost against maxMetricsCost.
func metricsVerdict(sc *scenario) string {
	off, ok := sc.Runs[noMetricsLabel]
	if !ok || sc.ID == 3 {
		return ""
	}
	c := ratio(summarize(sc.Runs[airLabel]).CPU, summarize(off).CPU) - 1
	verdict := "PASS"
	if c > maxMetricsCost {
		verdict = "**MISS**"
	}
	return fmt.Sprintf("- Scenario %d metrics cost: %s%% CPU/req over metrics off (target ≤ %.0f%%): %s\n", sc.ID, f(100*c, 1), 100*maxMetricsCost, verdict)
}
