package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReplaceSection(t *testing.T) {
	doc := "# Bench\n\nintro\n\n" + beginMarker + "\nold table\n" + endMarker + "\n\nafter\n"
	got, err := replaceSection(doc, "", "new table\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Bench\n\nintro\n\n" + beginMarker + "\nnew table\n" + endMarker + "\n\nafter\n"
	if got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for i, bad := range []string{"no markers", endMarker + beginMarker, beginMarker + " only"} {
		if _, err := replaceSection(bad, "", "x"); err == nil {
			t.Errorf("Test %d: no error for %q", i, bad)
		}
	}
}

// TestReplaceKeyedSection: a partial run's results go to a section of
// their own, added after the main one the first time and replaced after,
// and the main results stay.
func TestReplaceKeyedSection(t *testing.T) {
	doc := "# Bench\n\n" + beginMarker + "\nall scenarios\n" + endMarker + "\n\n## After\n"
	once, err := replaceSection(doc, "4,5,6,7", "long ones\n")
	if err != nil {
		t.Fatal(err)
	}
	twice, err := replaceSection(once, "4,5,6,7", "long ones again\n")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := markers("4,5,6,7")
	for i, want := range []string{"all scenarios\n" + endMarker, "### Scenarios 4, 5, 6, 7 only", begin + "\nlong ones again\n" + end, "\n\n## After\n"} {
		if !strings.Contains(twice, want) {
			t.Errorf("Test %d: %q missing from\n%s", i, want, twice)
		}
	}
	if strings.Contains(twice, "long ones\n") || strings.Count(twice, begin) != 1 {
		t.Errorf("the section was not replaced:\n%s", twice)
	}
	main, err := replaceSection(twice, "", "new\n")
	if err != nil || !strings.Contains(main, beginMarker+"\nnew\n"+endMarker) || !strings.Contains(main, "long ones again") {
		t.Errorf("the main section was not replaced alone (%v):\n%s", err, main)
	}
	for _, tc := range []struct {
		want map[int]bool
		pg   bool
		key  string
	}{
		{map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 9: true, 10: true}, false, ""},
		{map[int]bool{1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true}, false, "1,2,3,4,5,6,7"},
		{map[int]bool{9: true, 10: true}, false, "9,10"},
		{map[int]bool{4: true, 5: true, 6: true, 7: true}, false, "4,5,6,7"},
		{map[int]bool{}, true, "pg"},
	} {
		if got := sectionKey(tc.want, tc.pg); got != tc.key {
			t.Errorf("sectionKey(%v, %v) = %q, want %q", tc.want, tc.pg, got, tc.key)
		}
	}
}

func TestCPUModel(t *testing.T) {
	info := "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: other\n"
	if got := cpuModel([]byte(info)); got != "Intel(R) Xeon(R) CPU @ 2.20GHz" {
		t.Errorf("cpuModel = %q", got)
	}
	if got := cpuModel([]byte("processor\t: 0\n")); got != "unknown CPU" {
		t.Errorf("cpuModel without a model name = %q", got)
	}
}

func TestStreamOverhead(t *testing.T) {
	bare := summary{IdleRSS: 40 << 20, OpenRSS: 140 << 20}
	air := summary{IdleRSS: 90 << 20, OpenRSS: 240 << 20}
	delta, raw := streamOverhead(bare, air, 1024)
	// caddy-air grew by 150 MiB, bare by 100 MiB: 50 MiB / 1024 streams.
	if delta != 50 {
		t.Errorf("delta = %v KiB, want 50", delta)
	}
	if raw != 100 {
		t.Errorf("raw = %v KiB, want 100", raw)
	}
}

func TestVerdicts(t *testing.T) {
	runs := func(cpu time.Duration, rss int64, errs int) []run {
		r := run{CPU: cpu, PeakRSS: rss, result: result{OK: 1000 - errs, Errors: errs, Elapsed: time.Second}}
		return []run{r, r, r}
	}
	sc := &scenario{ID: 1, Runs: map[string][]run{
		bareLabel: runs(100*time.Millisecond, 100<<20, 0),
		airLabel:  runs(120*time.Millisecond, 110<<20, 2),
	}}
	got := verdicts([]*scenario{sc})
	for _, want := range []string{
		"Scenario 1 CPU/req: 1.20× bare (target ≤ 1.15×): **MISS**",
		"Scenario 1 peak RSS: 1.10× bare (target ≤ 1.25×): PASS",
		"Errors: 6 (target 0): **MISS**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts lack %q:\n%s", want, got)
		}
	}
}

func TestPeakSplit(t *testing.T) {
	runs := func(anon, file int64) []run {
		r := run{PeakRSS: anon + file, PeakAnon: anon, PeakFile: file}
		return []run{r, r, r}
	}
	sc := &scenario{ID: 1, Title: "1. chat", Runs: map[string][]run{
		bareLabel: runs(15<<20, 45<<20),
		airLabel:  runs(24<<20, 52<<20),
	}}
	slow := &scenario{ID: 3, Title: "3. slow", Runs: sc.Runs}
	got := peakSplit([]*scenario{sc, slow})
	for _, want := range []string{
		"| 1. chat | bare Caddy | 15.0 | 45.0 |",
		"| | caddy-air | 24.0 | 52.0 |",
		"| | difference | +9.0 | +7.0 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("peak split lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "3. slow") {
		t.Errorf("peak split covers the slow streams:\n%s", got)
	}
}

func TestSlowChunks(t *testing.T) {
	for i, tc := range []struct {
		life, delay time.Duration
		want        int
	}{
		{10 * time.Second, 100 * time.Millisecond, 98},
		{time.Second, time.Second, 1},
		{time.Second, 0, 1},
	} {
		if got := slowChunks(tc.life, tc.delay); got != tc.want {
			t.Errorf("Test %d: slowChunks(%v, %v) = %d, want %d", i, tc.life, tc.delay, got, tc.want)
		}
	}
}

func TestVerdictsLongScenarios(t *testing.T) {
	runs := func(cpu time.Duration, rss int64) []run {
		r := run{CPU: cpu, PeakRSS: rss, result: result{OK: 100, Elapsed: time.Second}}
		return []run{r, r, r}
	}
	long := &scenario{ID: 5, Runs: map[string][]run{
		bareLabel: runs(100*time.Millisecond, 100<<20),
		airLabel:  runs(120*time.Millisecond, 115<<20),
	}}
	stream := &scenario{ID: 6, Runs: map[string][]run{
		bareLabel: runs(100*time.Millisecond, 100<<20),
		airLabel:  runs(105*time.Millisecond, 100<<20),
	}}
	got := verdicts([]*scenario{long, stream})
	for _, want := range []string{
		"Scenario 5 CPU/req: 1.20× bare (target ≤ 1.30×): PASS",
		"Scenario 5 peak RSS: 1.15× bare (target ≤ 1.10×): **MISS**",
		"Scenario 6 CPU/req: 1.05× bare (target ≤ 1.00×): **MISS**",
		"Scenario 6 peak RSS: 1.00× bare (target ≤ 1.25×): PASS",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdicts lack %q:\n%s", want, got)
		}
	}
}

func TestMetricsCost(t *testing.T) {
	runs := func(cpu time.Duration) []run {
		r := run{CPU: cpu, result: result{OK: 1000, Elapsed: time.Second}}
		return []run{r, r, r}
	}
	for i, tc := range []struct {
		on   time.Duration
		want string
	}{
		{202 * time.Millisecond, "Scenario 2 metrics cost: 1.0% CPU/req over metrics off (target ≤ 3%): PASS"},
		{210 * time.Millisecond, "Scenario 2 metrics cost: 5.0% CPU/req over metrics off (target ≤ 3%): **MISS**"},
	} {
		sc := &scenario{ID: 2, Title: "2. chat, SSE", Runs: map[string][]run{
			bareLabel:      runs(150 * time.Millisecond),
			airLabel:       runs(tc.on),
			noMetricsLabel: runs(200 * time.Millisecond),
		}}
		if got := verdicts([]*scenario{sc}); !strings.Contains(got, tc.want) {
			t.Errorf("Test %d: verdicts lack %q:\n%s", i, tc.want, got)
		}
		if got := table([]*scenario{sc}); !strings.Contains(got, "| 2. chat, SSE | 202 | 200 | 1.0% |") && i == 0 {
			t.Errorf("Test %d: table lacks the metrics cost row:\n%s", i, got)
		}
	}
	// Without -metrics-off, nothing about metrics.
	sc := &scenario{ID: 2, Runs: map[string][]run{bareLabel: runs(time.Second), airLabel: runs(time.Second)}}
	if got := verdicts([]*scenario{sc}) + table([]*scenario{sc}); strings.Contains(got, "metrics") {
		t.Errorf("metrics cost reported without a metrics-off target:\n%s", got)
	}
}

// TestTableShowsBothDurabilities checks the main table of a run with
// -strict: a row per durability, the latency each adds to bare Caddy's,
// a ratio row each, and the closed-loop verdict on the default one.
func TestTableShowsBothDurabilities(t *testing.T) {
	runs := func(lat time.Duration, ok int) []run {
		lats := make([]time.Duration, 100)
		for i := range lats {
			lats[i] = lat
		}
		r := run{CPU: 100 * time.Millisecond, result: result{OK: ok, Elapsed: time.Second, Latencies: lats}}
		return []run{r, r, r}
	}
	sc := &scenario{ID: 9, Title: "9. closed loop", Runs: map[string][]run{
		bareLabel:   runs(time.Millisecond, 5000),
		airLabel:    runs(1500*time.Microsecond, 4800),
		strictLabel: runs(21*time.Millisecond, 2000),
	}}
	tbl, v := table([]*scenario{sc}), verdicts([]*scenario{sc})
	for _, want := range []string{
		"| +p50 ms | +p99 ms |",
		"| | caddy-air | 4800 | 1.50 | 1.50 | +0.50 | +0.50 |",
		"| | caddy-air, strict | 2000 | 21.00 | 21.00 | +20.00 | +20.00 |",
		"| | **ratio**, journaled | 0.96 |",
		"| | **ratio**, strict | 0.40 |",
	} {
		if !strings.Contains(tbl, want) {
			t.Errorf("table lacks %q:\n%s", want, tbl)
		}
	}
	for _, want := range []string{
		"Scenario 9 closed-loop throughput: 0.96× bare (target ≥ 0.9×): PASS",
		"strict durability: 0.40× bare, p50 +20.00 ms",
	} {
		if !strings.Contains(v, want) {
			t.Errorf("verdicts lack %q:\n%s", want, v)
		}
	}
}

// TestResultsFile: -write-readme writes into docs/perf/results.md, which
// holds the markers of the main section and of the partial runs, so that a
// run replaces the figures there rather than failing after its 20 minutes.
func TestResultsFile(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", resultsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "pg", "4,5,6,7"} {
		begin, end := markers(key)
		out, err := replaceSection(string(doc), key, "fresh figures\n")
		if err != nil {
			t.Fatalf("section %q: %v", key, err)
		}
		if !strings.Contains(out, begin+"\nfresh figures\n"+end) || strings.Count(out, begin) != 1 {
			t.Errorf("section %q was not replaced in place", key)
		}
	}
}
