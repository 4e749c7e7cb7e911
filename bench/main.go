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
// See bench/README.md and docs/perf/method.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
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
	pgOptions      string
	// pgInstances is the number of caddy-air instances sharing one
	// PostgreSQL cluster in scenario pg (at least 2).
	pgInstances int
	// pgLoads runs scenario pg's loads; takeover is the number of
	// rounds of its takeover measurement (see measureTakeover).
	pgLoads    bool
	takeover   int
	metricsOff bool
	// strict adds caddy-air with ledger_durability strict as a target.
	strict bool
	// conns is the number of connections of the closed-loop scenarios.
	conns int
	quiet bool
	idle  time.Duration
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
	flag.StringVar(&o.scenarios, "scenarios", defaultScenarios, "comma-separated scenarios to run; \"chaos\" (or 8) is the chaos run and \"pg\" caddy-air on PostgreSQL (needs its server binaries), \"translate\" chat requests for a Messages model against a chat model, none in the default set")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the -profile-target under scenario 2 to `file`")
	flag.StringVar(&o.heapProfile, "heapprofile", "", "write a heap profile of the -profile-target under scenario 2 to `file`")
	flag.StringVar(&o.profileTarget, "profile-target", "air", "process to profile: air (caddy-air) or bare (bare Caddy, for comparison)")
	flag.IntVar(&o.profileLoad, "profile-scenario", 2, "scenario whose load is profiled: 2, 4, 5 or 6")
	flag.IntVar(&o.profileSeconds, "profile-seconds", 10, "length of the CPU profile")
	flag.BoolVar(&o.writeReadme, "write-readme", false, "regenerate the results section of docs/perf/results.md")
	flag.StringVar(&o.airOptions, "air-options", "", "Caddyfile `text` added to caddy-air's air block, e.g. \"ledger_commit_interval 5ms\"")
	flag.StringVar(&o.pgOptions, "pg-options", "", "Caddyfile `text` for the block of scenario pg's `storage postgres` line, e.g. \"intent_gather 20ms\"")
	flag.BoolVar(&o.metricsOff, "metrics-off", false, "also run caddy-air with `metrics off` as a third target, to measure what its metrics cost")
	flag.IntVar(&o.pgInstances, "pg-instances", 3, "caddy-air instances sharing the PostgreSQL cluster in scenario pg (compared with as many bare Caddy processes)")
	flag.BoolVar(&o.pgLoads, "pg-loads", true, "run scenario pg's loads (false: only its -takeover rounds)")
	flag.IntVar(&o.takeover, "takeover", 0, "rounds of scenario pg's takeover measurement: an instance killed with streams in flight, timed until the others record them interrupted")
	flag.BoolVar(&o.strict, "strict", false, "also run caddy-air with `ledger_durability strict` as another target, so that the table shows both durabilities")
	flag.IntVar(&o.conns, "conns", 50, "connections of the closed-loop scenarios 9 and 10, each sending its next request when its last answer ended")
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
	case o.conns < 1 || o.conns > 2000:
		return errors.New("-conns must be in [1, 2000]")
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
	host := machine(strings.TrimSpace(string(version)))
	want, wantPG, err := parseScenarios(o.scenarios)
	if err != nil {
		return err
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
		fmt.Printf("\n%s\nCommand: `go run ./bench %s`.\n\n%s\n", host, strings.Join(os.Args[1:], " "), tbl)
		delete(want, chaosScenario)
		if len(want) == 0 {
			return nil
		}
	}

	b, upPort, stopAll, err := startTargets(ctx, o, tmp, logf)
	defer stopAll()
	if err != nil {
		return err
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
	scenarios, err := b.runScenarios(ctx, want, filepath.Join(tmp, "air", "badger", mediaDir))
	if err != nil {
		return err
	}
	var pgs []*pgScenario
	if wantPG {
		if pgs, err = b.pgScenarios(ctx, root, tmp, upPort); err != nil {
			return err
		}
	}

	var translated string
	if want[translateScenarioID] {
		if translated, err = b.translateScenario(ctx); err != nil {
			return err
		}
	}

	params, tbl, verdict := report(o, scenarios, idle, pgs, b.pgIdle)
	if translated != "" {
		if len(scenarios) == 0 && pgs == nil {
			tbl = "" // only scenario translate ran
		}
		tbl += "\nScenario translate: an OpenAI chat client's request for a Messages model (translated both ways) against the same request for a chat model (passed through), on caddy-air.\n" + translated
	}
	fmt.Printf("\n%s\n%s\n\n%s\n%s", host, params, tbl, verdict)
	if !o.writeReadme {
		return nil
	}
	path := filepath.Join(root, resultsFile)
	if err := writeResults(path, sectionKey(want, wantPG), time.Now(), host, params, tbl, verdict); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}
