package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is the throwaway PostgreSQL cluster of scenario pg, started
// with scripts/pg.sh on loopback with PostgreSQL's durable defaults.
type pgCluster struct {
	root string
	dir  string
	// DSN names the bench's database on it.
	DSN string
	// Postmaster is the pid of the server's main process; the backends
	// are its children.
	Postmaster int
}

// startPG starts a cluster and creates the bench's database on it.
func startPG(ctx context.Context, root string) (*pgCluster, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "pg.sh"), "start")
	cmd.Env = append(os.Environ(), "AIR_PG_DURABLE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/pg.sh start: %v", err)
	}
	c := &pgCluster{root: root}
	var super string
	for line := range strings.Lines(string(out)) {
		k, v, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "export ")), "=")
		switch v = strings.Trim(v, "'"); k {
		case "AIR_TEST_PG_DSN":
			super = v
		case "AIR_TEST_PG_DIR":
			c.dir = v
		}
	}
	if super == "" || c.dir == "" {
		return nil, fmt.Errorf("scripts/pg.sh start printed no DSN: %q", out)
	}
	if err := c.setup(ctx, super); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// setup creates the database and finds the postmaster.
func (c *pgCluster) setup(ctx context.Context, super string) error {
	conn, err := pgx.Connect(ctx, super)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE airbench TEMPLATE template0"); err != nil {
		return err
	}
	u, err := url.Parse(super)
	if err != nil {
		return err
	}
	u.Path = "/airbench"
	c.DSN = u.String()
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if c.Postmaster, err = strconv.Atoi(strings.TrimSpace(first)); err != nil {
		return fmt.Errorf("postmaster.pid: %v", err)
	}
	return nil
}

// Stop stops the cluster and removes its folder.
func (c *pgCluster) Stop() {
	if c.dir != "" {
		_ = exec.Command(filepath.Join(c.root, "scripts", "pg.sh"), "stop", c.dir).Run()
	}
}

// procStat is what scenario pg reads from /proc/<pid>/stat.
type procStat struct {
	PPID int
	// CPU is the process's user+system time; Children that of its
	// children it has waited for (cutime+cstime).
	CPU, Children time.Duration
}

// parseStat reads the parent pid and the CPU times from the content of
// /proc/<pid>/stat.
func parseStat(stat []byte) (procStat, error) {
	var s procStat
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("stat: no command name")
	}
	// Fields from 3 (state): ppid is 4, utime 14, stime 15, cutime 16,
	// cstime 17.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return s, fmt.Errorf("stat: %d fields after the command name, want at least 15", len(f))
	}
	var n [5]int64
	for j, k := range []int{1, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return s, fmt.Errorf("stat: field %d: %v", k+3, err)
		}
		n[j] = v
	}
	tick := time.Second / clockTicks
	s.PPID = int(n[0])
	s.CPU = time.Duration(n[1]+n[2]) * tick
	s.Children = time.Duration(n[3]+n[4]) * tick
	return s, nil
}

// clusterCPU returns the CPU time the cluster used so far: the
// postmaster's, its live children's (backends, WAL writer, checkpointer,
// autovacuum…), and that of the children that exited (in the
// postmaster's cutime+cstime once it reaped them), so that a backend
// that ends between two readings is still counted.
func clusterCPU(postmaster int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", postmaster))
	if err != nil {
		return 0, err
	}
	pm, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	total := pm.CPU + pm.Children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if s, err := parseStat(b); err == nil && s.PPID == postmaster {
			total += s.CPU
		}
	}
	return total, nil
}

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
		out.Elapsed = max(out.Elapsed, r.Elapsed)
	}
	slices.Sort(out.Latencies)
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
			b.logf("%s round %d %-28s %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  gateway CPU %6.0f µs/req  PostgreSQL CPU %6.0f µs/req  peak RSS %6.1f MiB  errors %d %s",
				title, i+1, t.label, r.RPS(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.99)),
				r.CPUPerRequest(), r.PGPerRequest(), mib(r.PeakRSS), r.Errors, r.FirstError)
			sc.Runs[t.label] = append(sc.Runs[t.label], r)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return sc, nil
}

// pgScenarios runs scenario pg: chat JSON and SSE against bare Caddy,
// caddy-air on Badger, and caddy-air on one PostgreSQL cluster with one
// and with two instances.
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
	for i := range 2 {
		p, err := newAirProcess(b.opts.caddyBin, tmp, fmt.Sprintf("air-pg-%d", i+1), upPort, "postgres "+pg.DSN, b.opts.airOptions)
		if err != nil {
			return nil, err
		}
		b.logf("starting %s on 127.0.0.1:%d (admin %d)", p.Name, p.Port, p.AdminPort)
		if err := p.Start(ctx); err != nil {
			return nil, err
		}
		instances = append(instances, p)
	}
	// One key, created through the first instance: the second reads it
	// from the database.
	key, err := createKey(ctx, instances[0])
	if err != nil {
		return nil, err
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
		{label: airLabel + " (Badger)", procs: []*caddyProcess{air.proc}, key: air.key, clients: clients(1)},
		{label: pgOneLabel, procs: instances[:1], key: key, clients: clients(1)},
		{label: pgTwoLabel, procs: instances, key: key, clients: clients(2)},
	}
	var out []*pgScenario
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

// dsnHost returns dsn's host and database, without its user.
func dsnHost(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "?"
	}
	return u.Host + u.Path
}

// Labels of scenario pg's caddy-air instances on PostgreSQL.
const (
	pgOneLabel = "caddy-air, PostgreSQL, 1 instance"
	pgTwoLabel = "caddy-air, PostgreSQL, 2 instances"
)
