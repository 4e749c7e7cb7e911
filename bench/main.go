// Command bench measures what caddy-air costs over bare Caddy: it serves
// the mock provider on loopback, starts a bare Caddy reverse_proxy and a
// caddy-air gateway in front of it from the same binary, drives both
// alternately with the same load and prints requests/s, latency, CPU per
// request, peak RSS and errors, and the ratios caddy-air / bare Caddy.
//
//	go run ./bench [-build] [-rounds 3] [-duration 5s] [-write-readme]
//
// `-scenarios chaos` runs the chaos scenario instead: two gateway configs,
// one and two deployments of a model, under load while one of two mock
// upstreams fails a share of its requests (see chaos.go).
//
// See bench/README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// options are the command-line flags.
type options struct {
	caddyBin       string
	build          bool
	rounds         int
	duration       time.Duration
	warmup         time.Duration
	rate           int
	streamRate     int
	longRate       int
	longStreamRate int
	longChunks     int
	inflight       int
	streams        int
	streamLife     time.Duration
	streamDelay    time.Duration
	ramp           time.Duration
	scenarios      string
	cpuProfile     string
	heapProfile    string
	profileSeconds int
	profileTarget  string
	profileLoad    int
	writeReadme    bool
	airOptions     string
	metricsOff     bool
	quiet          bool
	idle           time.Duration
	// Scenario 7.
	mediaSize        int // MiB
	mediaConcurrency int
	mediaDownloads   int
	// The chaos scenario.
	chaosDuration time.Duration
	chaosRate     int
	chaosFaults   string
	chaosSeed     uint64
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.caddyBin, "caddy", "/tmp/bench-caddy", "caddy binary with caddy-air (`go build -o FILE ./cmd/caddy`)")
	flag.BoolVar(&o.build, "build", false, "build the -caddy binary from ./cmd/caddy first")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds per scenario and target (medians are reported)")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "load duration of one round of scenarios 1 and 2")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load per target before scenarios 1 and 2")
	flag.IntVar(&o.rate, "rate", 1000, "requests per second of scenario 1 (non-streaming)")
	flag.IntVar(&o.streamRate, "stream-rate", 500, "requests per second of scenario 2 (SSE, 20 chunks)")
	flag.IntVar(&o.longRate, "long-rate", 50, "requests per second of scenarios 4 and 5 (200 KiB and 1 MiB conversations)")
	flag.IntVar(&o.longStreamRate, "long-stream-rate", 10, "streams per second of scenario 6 (long streams)")
	flag.IntVar(&o.longChunks, "long-chunks", 2000, "content chunks per stream of scenario 6")
	flag.IntVar(&o.inflight, "inflight", 512, "most requests outstanding at once in scenarios 1 and 2")
	flag.IntVar(&o.streams, "streams", 2000, "concurrent slow streams of scenario 3")
	flag.DurationVar(&o.streamLife, "stream-life", 10*time.Second, "duration of one slow stream")
	flag.DurationVar(&o.streamDelay, "stream-delay", 100*time.Millisecond, "pause between two events of a slow stream")
	flag.DurationVar(&o.ramp, "ramp", 2*time.Second, "time over which the slow streams are opened")
	flag.StringVar(&o.scenarios, "scenarios", "1,2,3,4,5,6,7", "comma-separated scenarios to run; \"chaos\" (or 8) is the chaos run and \"pg\" caddy-air on PostgreSQL (needs its server binaries), neither in the default set")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the -profile-target under scenario 2 to `file`")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile of the -profile-target under scenario 2 to `file`")
	flag.StringVar(&o.profileTarget, "profile-target", "air", "process to profile: air (caddy-air) or bare (bare Caddy, for comparison)")
	flag.IntVar(&o.profileLoad, "profile-scenario", 2, "scenario whose load is profiled: 2, 4, 5 or 6")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of the CPU profile")
	flag.BoolVar(&o.writeReadme, "write-readme", false, "regenerate the results section of bench/README.md")
	flag.StringVar(&o.airOptions, "air-options", "", "Caddyfile `text` added to caddy-air's air block, e.g. \"ledger_commit_interval 5ms\"")
	flag.BoolVar(&o.metricsOff, "metrics-off", false, "also run caddy-air with `metrics off` as a third target, to measure what its metrics cost")
	flag.BoolVar(&o.quiet, "q", false, "print only the final table")
	flag.DurationVar(&o.idle, "idle", 20*time.Second, "how long to measure both processes' CPU with no load, after they start (0: not at all)")
	flag.IntVar(&o.mediaSize, "media-size", 50, "MiB of the media file of scenario 7")
	flag.IntVar(&o.mediaConcurrency, "media-concurrency", 20, "concurrent downloads of scenario 7")
	flag.IntVar(&o.mediaDownloads, "media-downloads", 3, "downloads per connection and round of scenario 7")
	flag.DurationVar(&o.chaosDuration, "chaos-duration", time.Minute, "load duration of each config of the chaos scenario, and how long upstream A fails")
	flag.IntVar(&o.chaosRate, "chaos-rate", 100, "streamed chat requests per second of the chaos scenario")
	flag.StringVar(&o.chaosFaults, "chaos-faults", "429:0.1,500:0.1,reset:0.1", "upstream A's faults in the chaos scenario: comma-separated `mode:rate` (modes of air_mock's fault)")
	flag.Uint64Var(&o.chaosSeed, "chaos-seed", 1, "seed of upstream A's fault draws in the chaos scenario")
	flag.Parse()
	return o
}

func main() {
	o := parseFlags()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := benchmark(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		stop()
		os.Exit(1)
	}
}

// repoRoot returns the directory of the caddy-air module.
func repoRoot() string {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod)
	}
	wd, _ := os.Getwd()
	return wd
}

// validate rejects flag values that would make the run unbounded or
// meaningless.
func (o options) validate() error {
	switch {
	case o.rounds < 1:
		return errors.New("-rounds must be at least 1")
	case o.rate < 1 || o.streamRate < 1 || o.longRate < 1 || o.longStreamRate < 1 || o.inflight < 1 || o.streams < 1:
		return errors.New("-rate, -stream-rate, -long-rate, -long-stream-rate, -inflight and -streams must be positive")
	case o.longChunks < 1 || o.longChunks > 10000:
		return errors.New("-long-chunks must be in [1, 10000] (the mock provider's limit)")
	case o.duration <= 0 || o.duration > 5*time.Minute || o.warmup < 0 || o.warmup > time.Minute:
		return errors.New("-duration must be in (0, 5m] and -warmup in [0, 1m]")
	case o.streamLife <= 0 || o.streamLife > 5*time.Minute || o.streamDelay <= 0 || o.ramp <= 0 || o.ramp >= o.streamLife:
		return errors.New("-stream-life must be in (0, 5m], -stream-delay positive, -ramp in (0, stream-life)")
	case o.profileSeconds < 1 || o.profileSeconds > 120:
		return errors.New("-profile-seconds must be in [1, 120]")
	case o.profileLoad != 2 && (o.profileLoad < 4 || o.profileLoad > 6):
		return errors.New("-profile-scenario must be 2, 4, 5 or 6")
	case o.profileTarget != "air" && o.profileTarget != "bare":
		return errors.New("-profile-target must be air or bare")
	case o.idle < 0 || o.idle > 5*time.Minute:
		return errors.New("-idle must be in [0, 5m]")
	case o.chaosDuration <= 0 || o.chaosDuration > 5*time.Minute || o.chaosRate < 1 || o.chaosRate > 2000:
		return errors.New("-chaos-duration must be in (0, 5m] and -chaos-rate in [1, 2000]")
	case o.mediaSize < 1 || o.mediaSize > 256 || o.mediaConcurrency < 1 || o.mediaConcurrency > 200 || o.mediaDownloads < 1 || o.mediaDownloads > 100:
		return errors.New("-media-size must be in [1, 256] (the mock provider's limit), -media-concurrency in [1, 200], -media-downloads in [1, 100]")
	}
	_, err := parseChaosFaults(o.chaosFaults, o.chaosDuration)
	return err
}

func benchmark(ctx context.Context, o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	root := repoRoot()
	logf := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	if o.build {
		logf("building %s from %s/cmd/caddy", o.caddyBin, root)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", o.caddyBin, "./cmd/caddy")
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building caddy: %v", err)
		}
	}
	version, err := exec.Command(o.caddyBin, "version").Output()
	if err != nil {
		return fmt.Errorf("%s: %v (build it with -build or `go build -o %s ./cmd/caddy`)", o.caddyBin, err, o.caddyBin)
	}
	want := map[int]bool{}
	wantPG := false
	for _, s := range strings.Split(o.scenarios, ",") {
		switch s = strings.TrimSpace(s); s {
		case "1", "2", "3", "4", "5", "6", "7", "8":
			want[int(s[0]-'0')] = true
		case "chaos":
			want[chaosScenario] = true
		case "pg":
			wantPG = true
		default:
			return fmt.Errorf("-scenarios: unknown scenario %q", s)
		}
	}

	tmp, err := os.MkdirTemp("", "caddy-air-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	if want[chaosScenario] {
		tbl, err := runChaos(ctx, o, tmp, logf)
		if err != nil {
			return err
		}
		host := machine(strings.TrimSpace(string(version)))
		fmt.Printf("\n%s\nCommand: `go run ./bench %s`.\n\n%s\n", host, strings.Join(os.Args[1:], " "), tbl)
		delete(want, chaosScenario)
		if len(want) == 0 {
			return nil
		}
	}

	// The upstream: the mock provider, in this process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	upstream := &http.Server{
		Handler:           mockprovider.New(mockprovider.Config{APIKey: upstreamKey, VideoDuration: mockVideoDuration}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go upstream.Serve(ln)
	defer upstream.Close()
	upPort := ln.Addr().(*net.TCPAddr).Port

	bare, air, err := newProcesses(o.caddyBin, tmp, upPort, o.airOptions)
	if err != nil {
		return err
	}
	defer bare.Stop()
	defer air.Stop()
	procs := []*caddyProcess{bare, air}
	var noMetrics *caddyProcess
	if o.metricsOff {
		if noMetrics, err = newAirProcess(o.caddyBin, tmp, noMetricsName, upPort, "", o.airOptions+"\n\t\tmetrics off"); err != nil {
			return err
		}
		defer noMetrics.Stop()
		procs = append(procs, noMetrics)
	}
	for _, p := range procs {
		logf("starting %s Caddy on 127.0.0.1:%d (admin %d)", p.Name, p.Port, p.AdminPort)
		if err := p.Start(ctx); err != nil {
			return err
		}
	}
	key, err := createKey(ctx, air)
	if err != nil {
		return err
	}
	b := &bench{
		opts: o,
		targets: []*target{
			{proc: bare, key: upstreamKey, client: newClient(o.inflight)},
			{proc: air, key: key, client: newClient(o.inflight)},
		},
		logf: logf,
	}
	if noMetrics != nil {
		k, err := createKey(ctx, noMetrics)
		if err != nil {
			return err
		}
		b.targets = append(b.targets, &target{proc: noMetrics, key: k, client: newClient(o.inflight)})
	}
	b.restart = func(ctx context.Context) error {
		for _, t := range b.targets {
			t.client.CloseIdleConnections()
			t.proc.Stop()
			if err := t.proc.Start(ctx); err != nil {
				return err
			}
		}
		return nil
	}

	var idle *idleCPU
	if o.idle > 0 {
		logf("measuring idle CPU for %v", o.idle)
		time.Sleep(2 * time.Second) // let the starts settle
		if idle, err = b.measureIdle(ctx, o.idle); err != nil {
			return err
		}
		logf("%s", strings.TrimSpace(idle.String()))
	}

	var scenarios []*scenario
	if want[1] {
		title := fmt.Sprintf("1. chat, JSON, %d req/s", o.rate)
		sc, err := b.rateScenario(ctx, 1, title, chatBody(false, ""), false, o.rate)
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
	}
	streamBody := chatBody(true, `"mock_chunks":20`)
	if want[2] {
		title := fmt.Sprintf("2. chat, SSE 20 chunks, %d req/s", o.streamRate)
		sc, err := b.rateScenario(ctx, 2, title, streamBody, true, o.streamRate)
		if err != nil {
			return err
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
			return err
		}
	}
	if want[3] {
		sc, err := b.slowScenario(ctx)
		if err != nil {
			return err
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
			return err
		}
		sc, err := b.rateScenario(ctx, rs.id, rs.title, rs.body, rs.stream, rs.rate)
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
	}
	if want[7] {
		sc, err := b.mediaScenario(ctx, filepath.Join(tmp, "air", "badger", mediaDir))
		if err != nil {
			return err
		}
		scenarios = append(scenarios, sc)
	}

	var pgs []*pgScenario
	if wantPG {
		if pgs, err = b.pgScenarios(ctx, root, tmp, upPort); err != nil {
			return err
		}
	}

	host := machine(strings.TrimSpace(string(version)))
	params := fmt.Sprintf("Parameters: %d rounds per scenario and target, alternating which goes first; "+
		"scenarios 1 and 2: %v of constant-rate load per round (after %v of warm-up), at most %d requests in flight; "+
		"scenario 3: %d streams opened over %v, %v between events, ~%v each, fresh processes each round; "+
		"scenarios 4 to 6 like 1 and 2; scenario 7: %d MiB, %d downloads at once, %d each per round. Command: `go run ./bench %s`.",
		o.rounds, o.duration, o.warmup, o.inflight, o.streams, o.ramp, o.streamDelay, o.streamLife,
		o.mediaSize, o.mediaConcurrency, o.mediaDownloads, strings.Join(os.Args[1:], " "))
	var tbl, verdict string
	if len(scenarios) > 0 || pgs == nil {
		tbl, verdict = table(scenarios), verdicts(scenarios)
	}
	tbl += idle.String()
	if pgs != nil {
		params += " Scenario pg: " + pgParams
		tbl = strings.TrimPrefix(tbl+"\n"+pgTable(pgs)+b.pgIdle, "\n")
		verdict += pgVerdicts(pgs)
	}
	fmt.Printf("\n%s\n%s\n\n%s\n%s", host, params, tbl, verdict)
	if o.writeReadme {
		path := filepath.Join(root, "bench", "README.md")
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out, err := replaceSection(string(doc), resultsSection(time.Now(), host, params, tbl, verdict))
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			return err
		}
		logf("wrote %s", path)
	}
	return nil
}

// newProcesses prepares the bare and the caddy-air Caddy processes, with
// their configs and working directories under tmp.
func newProcesses(bin, tmp string, upPort int, airOptions string) (bare, air *caddyProcess, err error) {
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, nil, err
		}
	}
	mk := func(name string, port, admin int, config func(dir string) (string, error)) (*caddyProcess, error) {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		path, err := config(dir)
		if err != nil {
			return nil, err
		}
		return &caddyProcess{Name: name, Port: port, AdminPort: admin, bin: bin, config: path,
			workDir: dir, logPath: filepath.Join(dir, "caddy.log")}, nil
	}
	airData := filepath.Join(tmp, "air", "badger")
	bare, err = mk("bare", ports[0], ports[1], func(dir string) (string, error) {
		return writeFile(dir, "Caddyfile", bareCaddyfile(ports[1], ports[0], upPort, filepath.Join(airData, mediaDir)))
	})
	if err != nil {
		return nil, nil, err
	}
	air, err = newAirProcessOn(bin, tmp, "air", ports[2], ports[3], upPort, "", airOptions)
	return bare, air, err
}

// noMetricsName names the caddy-air process with `metrics off`.
const noMetricsName = "air-nometrics"

// newAirProcess prepares another caddy-air process, on fresh ports, with
// storage as in newAirProcessOn.
func newAirProcess(bin, tmp, name string, upPort int, storage, airOptions string) (*caddyProcess, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	admin, err := freePort()
	if err != nil {
		return nil, err
	}
	return newAirProcessOn(bin, tmp, name, port, admin, upPort, storage, airOptions)
}

// newAirProcessOn prepares a caddy-air process named name, its config and
// working directory under tmp. storage is the arguments of its storage
// line; empty means Badger in its working directory.
func newAirProcessOn(bin, tmp, name string, port, admin, upPort int, storage, airOptions string) (*caddyProcess, error) {
	dir := filepath.Join(tmp, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	prices, err := writeFile(dir, "prices.json", pricesJSON)
	if err != nil {
		return nil, err
	}
	if storage == "" {
		storage = "badger " + filepath.Join(dir, "badger")
	}
	path, err := writeFile(dir, "Caddyfile", airCaddyfile(admin, port, upPort, storage, prices, airOptions))
	if err != nil {
		return nil, err
	}
	return &caddyProcess{Name: name, Port: port, AdminPort: admin, bin: bin, config: path,
		workDir: dir, logPath: filepath.Join(dir, "caddy.log")}, nil
}
