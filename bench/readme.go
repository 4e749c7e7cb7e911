package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// report renders a run's results: the parameters paragraph, the tables
// and the verdicts against the targets.
func report(o options, scenarios []*scenario, idle *idleCPU, pgs []*pgScenario, pgIdle string) (params, tbl, verdict string) {
	params = fmt.Sprintf("Parameters: %d rounds per scenario and target, alternating which goes first; "+
		"scenarios 1 and 2: %v of constant-rate load per round (after %v of warm-up), at most %d requests in flight; "+
		"scenario 3: %d streams opened over %v, %v between events, ~%v each, fresh processes each round; "+
		"scenarios 4 to 6 like 1 and 2; scenario 7: %d MiB, %d downloads at once, %d each per round. Command: `go run ./bench %s`.",
		o.rounds, o.duration, o.warmup, o.inflight, o.streams, o.ramp, o.streamDelay, o.streamLife,
		o.mediaSize, o.mediaConcurrency, o.mediaDownloads, strings.Join(os.Args[1:], " "))
	if len(scenarios) > 0 || pgs == nil {
		tbl, verdict = table(scenarios), verdicts(scenarios)
	}
	tbl += idle.String()
	if pgs != nil {
		params += " Scenario pg: " + pgParams
		tbl = strings.TrimPrefix(tbl+"\n"+pgTable(pgs)+pgIdle, "\n")
		verdict += pgVerdicts(pgs)
	}
	return params, tbl, verdict
}

// resultsFile is where -write-readme writes the results, relative to the
// repository root: the generated page of docs/perf.
const resultsFile = "docs/perf/results.md"

// writeResults regenerates, in the results page at path, the results section
// of the scenarios run: the main one when the run had the default set
// (key ""), or else the section of that set of scenarios (see
// replaceSection), so that a partial run does not replace the rows of the
// scenarios it did not run.
func writeResults(path, key string, when time.Time, host, params, tbl, verdict string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceSection(string(doc), key, resultsSection(when, host, params, tbl, verdict))
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// defaultScenarios is -scenarios' default: a run of these writes the main
// results section.
const defaultScenarios = "1,2,3,4,5,6,7,9,10"

// sectionKey names the results section of a run of the scenarios in want:
// "" for the default set, else their sorted list ("4,5,6,7", "pg").
func sectionKey(want map[int]bool, pg bool) string {
	var ids []string
	for id := 1; id <= 10; id++ {
		if id == chaosScenario {
			continue
		}
		if want[id] {
			ids = append(ids, strconv.Itoa(id))
		}
	}
	if pg {
		ids = append(ids, "pg")
	}
	if want[translateScenarioID] {
		ids = append(ids, "translate")
	}
	if k := strings.Join(ids, ","); k != defaultScenarios {
		return k
	}
	return ""
}

// Markers of the generated sections of the results page.
const (
	beginMarker = "<!-- bench:results:begin -->"
	endMarker   = "<!-- bench:results:end -->"
)

// markers returns the begin and end markers of the section named key.
func markers(key string) (begin, end string) {
	if key == "" {
		return beginMarker, endMarker
	}
	return "<!-- bench:results:" + key + ":begin -->", "<!-- bench:results:" + key + ":end -->"
}

// replaceSection returns doc with the text between the markers of the
// section named key replaced by section. A keyed section that is not there
// yet is added after the main one, under a heading of its own.
func replaceSection(doc, key, section string) (string, error) {
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	if i < 0 || j < 0 || j < i {
		return "", errors.New(resultsFile + ": results markers missing or out of order")
	}
	begin, end := markers(key)
	i, j = strings.Index(doc, begin), strings.Index(doc, end)
	switch {
	case i >= 0 && j > i:
		return doc[:i+len(begin)] + "\n" + section + doc[j:], nil
	case i >= 0 || j >= 0:
		return "", fmt.Errorf("%s: markers of the results of scenarios %s out of order", resultsFile, key)
	}
	at := strings.Index(doc, endMarker) + len(endMarker)
	added := fmt.Sprintf("\n\n### Scenarios %s only\n\nA run of these scenarios alone, written by `-write-readme`; "+
		"the main results above come from a run of all of them.\n\n%s\n%s%s", strings.ReplaceAll(key, ",", ", "), begin, section, end)
	return doc[:at] + added + doc[at:], nil
}

// resultsSection is the generated section of the results page.
func resultsSection(when time.Time, host, params, tbl, verdict string) string {
	return fmt.Sprintf("Run of %s on %s.\n\n%s\n\n%s\n%s\n", when.UTC().Format("2006-01-02 15:04 MST"), host, params, tbl, verdict)
}
