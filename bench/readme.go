package main

import (
	"errors"
	"fmt"
	"os"
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

// writeResults regenerates the results section of the README at path.
func writeResults(path string, when time.Time, host, params, tbl, verdict string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := replaceSection(string(doc), resultsSection(when, host, params, tbl, verdict))
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

const (
	beginMarker = "<!-- bench:results:begin -->"
	endMarker   = "<!-- bench:results:end -->"
)

// replaceSection returns doc with the text between the markers replaced
// by section.
func replaceSection(doc, section string) (string, error) {
	i := strings.Index(doc, beginMarker)
	j := strings.Index(doc, endMarker)
	if i < 0 || j < 0 || j < i {
		return "", errors.New("README: results markers missing or out of order")
	}
	return doc[:i+len(beginMarker)] + "\n" + section + doc[j:], nil
}

// resultsSection is the generated README section.
func resultsSection(when time.Time, host, params, tbl, verdict string) string {
	return fmt.Sprintf("Run of %s on %s.\n\n%s\n\n%s\n%s\n", when.UTC().Format("2006-01-02 15:04 MST"), host, params, tbl, verdict)
}
