package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// pgTarget is one configuration of scenario pg: one or more Caddy
// processes that share the load evenly.
type pgTarget struct {
	label   string
	procs   []*caddyProcess
	key     string
	clients []*http.Client
}

// pgRun is one measured run of a pgTarget.
type pgRun struct {
	run
	// PG is the CPU time the PostgreSQL cluster used during the run.
	PG time.Duration
}

// PGPerRequest returns the cluster's CPU time per request in µs.
func (r pgRun) PGPerRequest() float64 {
	return ratio(float64(r.PG.Microseconds()), float64(r.Requests()))
}

// load sends rate requests per second for d, split evenly over the
// target's processes, and merges what they answered.
func (t *pgTarget) load(ctx context.Context, body []byte, stream bool, rate int, d time.Duration, inflight int) result {
	n := len(t.procs)
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, p := range t.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := request{URL: p.URL("/v1/chat/completions"), Key: t.key, Body: body, Stream: stream}
			results[i] = constantRate(ctx, t.clients[i], req, max(1, rate/n), d, max(1, inflight/n), 30*time.Second)
		}()
	}
	wg.Wait()
	var out result
	for _, r := range results {
		out.OK += r.OK
		out.Errors += r.Errors
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		out.Latencies = append(out.Latencies, r.Latencies...)
		out.FirstBytes = append(out.FirstBytes, r.FirstBytes...)
		out.Elapsed = max(out.Elapsed, r.Elapsed)
	}
	slices.Sort(out.Latencies)
	slices.Sort(out.FirstBytes)
	return out
}

// measure runs load against t, reading the CPU time of its processes and
// of the cluster, and the peak RSS of its largest process.
func (t *pgTarget) measure(pg *pgCluster, load func() result) (pgRun, error) {
	var r pgRun
	cpu0 := make([]time.Duration, len(t.procs))
	samplers := make([]*sampler, len(t.procs))
	for i, p := range t.procs {
		c, err := processCPU(p.PID())
		if err != nil {
			return r, err
		}
		cpu0[i], samplers[i] = c, startSampler(p.PID(), 100*time.Millisecond)
	}
	pg0, err := clusterCPU(pg.Postmaster)
	if err != nil {
		return r, err
	}
	r.result = load()
	time.Sleep(settle)
	pg1, err := clusterCPU(pg.Postmaster)
	if err != nil {
		return r, err
	}
	r.PG = pg1 - pg0
	for i, p := range t.procs {
		samples := samplers[i].Stop()
		c, err := processCPU(p.PID())
		if err != nil {
			return r, fmt.Errorf("%s: %v (did it exit?)", p.Name, err)
		}
		r.CPU += c - cpu0[i]
		if peak := peakSample(samples); peak.RSS > r.PeakRSS {
			r.PeakRSS, r.PeakAnon, r.PeakFile = peak.RSS, peak.Anon, peak.File
		}
	}
	return r, nil
}

// pgScenario is one load of scenario pg, run against every pgTarget.
type pgScenario struct {
	Title string
	// Labels are the targets, in the order of the table.
	Labels []string
	Runs   map[string][]pgRun
}

// runPG runs body at rate against every target, for every round,
// alternating the order.
func (b *bench) runPG(ctx context.Context, pg *pgCluster, targets []*pgTarget, title string, body []byte, stream bool, rate int) (*pgScenario, error) {
	o := b.opts
	sc := &pgScenario{Title: title, Runs: map[string][]pgRun{}}
	for _, t := range targets {
		sc.Labels = append(sc.Labels, t.label)
		if res := t.load(ctx, body, stream, rate, o.warmup, o.inflight); res.Errors > 0 {
			return nil, fmt.Errorf("%s: warm-up against %s: %d errors, first: %s", title, t.label, res.Errors, res.FirstError)
		}
	}
	for i := range o.rounds {
		order := slices.Clone(targets)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			r, err := t.measure(pg, func() result { return t.load(ctx, body, stream, rate, o.duration, o.inflight) })
			if err != nil {
				return nil, err
			}
			b.logf("%s round %d %-28s %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  first byte p50 %6.2f ms  p99 %7.2f ms  gateway CPU %6.0f µs/req  PostgreSQL CPU %6.0f µs/req  peak RSS %6.1f MiB  errors %d %s",
				title, i+1, t.label, r.RPS(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.99)),
				ms(percentile(r.FirstBytes, 0.5)), ms(percentile(r.FirstBytes, 0.99)), r.CPUPerRequest(), r.PGPerRequest(), mib(r.PeakRSS), r.Errors, r.FirstError)
			sc.Runs[t.label] = append(sc.Runs[t.label], r)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return sc, nil
}

// pgScenarios runs scenario pg: chat JSON and SSE against bare Caddy (one
// and -pg-instances processes), caddy-air on Badger, and caddy-air on one
// PostgreSQL cluster with one and with -pg-instances instances.
func (b *bench) pgScenarios(ctx context.Context, root, tmp string, upPort int) ([]*pgScenario, error) {
	pg, err := startPG(ctx, root)
	if err != nil {
		return nil, err
	}
	defer pg.Stop()
	b.logf("scenario pg: PostgreSQL (pid %d) on %s", pg.Postmaster, dsnHost(pg.DSN))
	var instances []*caddyProcess
	defer func() {
		for _, p := range instances {
			p.Stop()
		}
	}()
	storage := "postgres " + pg.DSN
	if b.opts.pgOptions != "" {
		storage += " {\n\t\t\t" + b.opts.pgOptions + "\n\t\t}"
	}
	n := max(2, b.opts.pgInstances)
	for i := range n {
		p, err := newAirProcess(b.opts.caddyBin, tmp, fmt.Sprintf("air-pg-%d", i+1), upPort, storage, b.opts.airOptions)
		if err != nil {
			return nil, err
		}
		b.logf("starting %s on 127.0.0.1:%d (admin %d)", p.Name, p.Port, p.AdminPort)
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
		instances = append(instances, p)
	}
	// n instances are compared with n bare Caddy processes sharing the
	// same load: each of n partly busy processes pays its own runtime
	// (schedulers, timers, GC) whatever it serves.
	bareN := []*caddyProcess{b.targets[0].proc}
	for i := 2; i <= n; i++ {
		p, err := newBareProcess(b.opts.caddyBin, tmp, fmt.Sprintf("bare-%d", i), upPort)
		if err != nil {
			return nil, err
		}
		b.logf("starting %s on 127.0.0.1:%d (admin %d)", p.Name, p.Port, p.AdminPort)
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
		defer p.Stop()
		bareN = append(bareN, p)
	}
	// One key, created through the first instance: the second reads it
	// from the database.
	key, err := createKey(ctx, instances[0])
	if err != nil {
		return nil, err
	}
	if b.opts.idle > 0 {
		b.logf("measuring the PostgreSQL instances' idle CPU for %v", b.opts.idle)
		time.Sleep(2 * time.Second) // let the starts settle
		if b.pgIdle, err = measurePGIdle(ctx, instances, pg, b.opts.idle); err != nil {
			return nil, err
		}
	}
	clients := func(n int) []*http.Client {
		out := make([]*http.Client, n)
		for i := range out {
			out[i] = newClient(b.opts.inflight)
		}
		return out
	}
	bare, air := b.targets[0], b.targets[1]
	targets := []*pgTarget{
		{label: bareLabel, procs: []*caddyProcess{bare.proc}, key: bare.key, clients: clients(1)},
		{label: bareManyLabel(n), procs: bareN, key: bare.key, clients: clients(n)},
		{label: airLabel + " (Badger)", procs: []*caddyProcess{air.proc}, key: air.key, clients: clients(1)},
		{label: pgOneLabel, procs: instances[:1], key: key, clients: clients(1)},
		{label: pgManyLabel(n), procs: instances, key: key, clients: clients(n)},
	}
	if b.opts.takeover > 0 {
		runs, err := b.measureTakeover(ctx, tmp, upPort, storage, key, instances[0])
		if err != nil {
			return nil, err
		}
		b.pgIdle += takeoverReport(runs, n)
	}
	out := []*pgScenario{}
	if !b.opts.pgLoads {
		return out, nil
	}
	for _, s := range []struct {
		title  string
		body   []byte
		stream bool
		rate   int
	}{
		{fmt.Sprintf("pg-1. chat, JSON, %d req/s", b.opts.rate), chatBody(false, ""), false, b.opts.rate},
		{fmt.Sprintf("pg-2. chat, SSE 20 chunks, %d req/s", b.opts.streamRate), chatBody(true, `"mock_chunks":20`), true, b.opts.streamRate},
	} {
		sc, err := b.runPG(ctx, pg, targets, s.title, s.body, s.stream, s.rate)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// pgOneLabel is the label of scenario pg's caddy-air instance on
// PostgreSQL alone; pgPrefix starts the labels of every target on it.
const (
	pgPrefix   = "caddy-air, PostgreSQL, "
	pgOneLabel = pgPrefix + "1 instance"
)

// pgManyLabel is the label of scenario pg's n caddy-air instances on
// PostgreSQL, bareManyLabel that of the n bare Caddy processes they are
// compared with.
func pgManyLabel(n int) string   { return fmt.Sprintf("%s%d instances", pgPrefix, n) }
func bareManyLabel(n int) string { return fmt.Sprintf("bare Caddy, %d instances", n) }

// measurePGIdle reads the CPU time of the instances and of the cluster
// over d, with no load, and describes it.
func measurePGIdle(ctx context.Context, instances []*caddyProcess, pg *pgCluster, d time.Duration) (string, error) {
	read := func() ([]time.Duration, error) {
		var out []time.Duration
		for _, p := range instances {
			c, err := processCPU(p.PID())
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		c, err := clusterCPU(pg.Postmaster)
		return append(out, c), err
	}
	before, err := read()
	if err != nil {
		return "", err
	}
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(d):
	}
	after, err := read()
	if err != nil {
		return "", err
	}
	var parts []string
	for i := range before {
		name := "PostgreSQL"
		if i < len(instances) {
			name = instances[i].Name
		}
		c := after[i] - before[i]
		parts = append(parts, fmt.Sprintf("%s %s ms (%s%% of a core)", name,
			f(float64(c.Microseconds())/1000, 0), f(100*c.Seconds()/d.Seconds(), 2)))
	}
	return fmt.Sprintf("\nIdle CPU on PostgreSQL, both instances started and served nothing for %v: %s.\n", d, strings.Join(parts, ", ")), nil
}
