package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// parseScenarios reads -scenarios: the numbered scenarios wanted (chaos
// as chaosScenario), and whether scenario pg is.
func parseScenarios(list string) (want map[int]bool, pg bool, err error) {
	want = map[int]bool{}
	for _, s := range strings.Split(list, ",") {
		switch s = strings.TrimSpace(s); s {
		case "1", "2", "3", "4", "5", "6", "7", "8", "9", "10":
			n, _ := strconv.Atoi(s)
			want[n] = true
		case "chaos":
			want[chaosScenario] = true
		case "translate":
			want[translateScenarioID] = true
		case "pg":
			pg = true
		default:
			return nil, false, fmt.Errorf("-scenarios: unknown scenario %q", s)
		}
	}
	return want, pg, nil
}

// runScenarios runs the numbered scenarios 1 to 7, 9 and 10 that are
// wanted, 9 and 10 (closed loop) after 2, and the profiling run when a
// profile was asked for (after them). mediaDir is caddy-air's media folder, which bare Caddy's
// file_server serves in scenario 7.
func (b *bench) runScenarios(ctx context.Context, want map[int]bool, mediaDir string) ([]*scenario, error) {
	o := b.opts
	var scenarios []*scenario
	if want[1] {
		title := fmt.Sprintf("1. chat, JSON, %d req/s", o.rate)
		sc, err := b.rateScenario(ctx, 1, title, chatBody(false, ""), false, o.rate, 0)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	streamBody := chatBody(true, `"mock_chunks":20`)
	if want[2] {
		title := fmt.Sprintf("2. chat, SSE 20 chunks, %d req/s", o.streamRate)
		sc, err := b.rateScenario(ctx, 2, title, streamBody, true, o.streamRate, 20)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	if want[9] {
		title := fmt.Sprintf("9. chat, JSON, closed loop, %d connections", o.conns)
		sc, err := b.closedScenario(ctx, 9, title, chatBody(false, ""), false, 0)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	if want[10] {
		title := fmt.Sprintf("10. chat, SSE 20 chunks, closed loop, %d connections", o.conns)
		sc, err := b.closedScenario(ctx, 10, title, streamBody, true, 20)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	if o.cpuProfile != "" || o.heapProfile != "" {
		profiled := b.targets[1]
		if o.profileTarget == "bare" {
			profiled = b.targets[0]
		}
		load := longScenario{id: 2, body: streamBody, stream: true, rate: o.streamRate}
		if o.profileLoad >= 4 {
			load = longScenarios(o)[o.profileLoad-4]
		}
		if err := b.profileRun(ctx, profiled, load); err != nil {
			return nil, err
		}
	}
	if want[3] {
		sc, err := b.slowScenario(ctx)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	for _, rs := range longScenarios(o) {
		if !want[rs.id] {
			continue
		}
		// Fresh processes: the heap a scenario of large bodies grew would
		// stay in the next one's peak RSS.
		if err := b.restart(ctx); err != nil {
			return nil, err
		}
		sc, err := b.rateScenario(ctx, rs.id, rs.title, rs.body, rs.stream, rs.rate, rs.minEvents)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	if want[7] {
		sc, err := b.mediaScenario(ctx, mediaDir)
		if err != nil {
			return nil, err
		}
		scenarios = append(scenarios, sc)
	}
	return scenarios, nil
}
