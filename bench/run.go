package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// target is one Caddy under test with the key its clients send.
type target struct {
	proc   *caddyProcess
	key    string
	client *http.Client
}

// Label returns the target's name in tables.
func (t *target) Label() string {
	switch t.proc.Name {
	case "air":
		return airLabel
	case noMetricsName:
		return noMetricsLabel
	case strictName:
		return strictLabel
	}
	return "bare Caddy"
}

// run is one measured load run against one target.
type run struct {
	result
	// CPU is the user+system time the Caddy process used during the run.
	CPU time.Duration
	// PeakRSS is the largest VmRSS sampled during the run; PeakAnon and
	// PeakFile split the sample it came from (see memStatus).
	PeakRSS, PeakAnon, PeakFile int64
	// HWM is VmHWM at the end of the run; the peak of the run when
	// HWMReset, else the peak of the process's life.
	HWM int64
	// HWMReset says VmHWM was reset before the run.
	HWMReset bool
	// IdleRSS and OpenRSS are, for slow streams, the median RSS before
	// the first stream and while all streams were open.
	IdleRSS, OpenRSS int64
}

// Requests returns how many requests the run sent.
func (r run) Requests() int { return r.OK + r.Errors }

// CPUPerRequest returns the Caddy CPU time per request in microseconds.
func (r run) CPUPerRequest() float64 {
	return ratio(float64(r.CPU.Microseconds()), float64(r.Requests()))
}

// RPS returns the rate of successful requests.
func (r run) RPS() float64 {
	return ratio(float64(r.OK), r.Elapsed.Seconds())
}

// settle is how long a run waits after its last answer before reading the
// CPU counters, so that work a request leaves behind (ledger writes) is
// counted.
const settle = 300 * time.Millisecond

// measure runs load against t while sampling the Caddy process. It returns
// the run and the RSS samples, taken every 100 ms.
func measure(t *target, load func() result) (run, []rssSample, error) {
	pid := t.proc.PID()
	var r run
	r.HWMReset = resetHWM(pid)
	cpu0, err := processCPU(pid)
	if err != nil {
		return r, nil, err
	}
	s := startSampler(pid, 100*time.Millisecond)
	r.result = load()
	time.Sleep(settle)
	samples := s.Stop()
	cpu1, err := processCPU(pid)
	if err != nil {
		return r, nil, fmt.Errorf("%s: %v (did it exit?)", t.proc.Name, err)
	}
	m, err := processMem(pid)
	if err != nil {
		return r, nil, err
	}
	r.CPU = cpu1 - cpu0
	peak := peakSample(append(samples, rssSample{RSS: m.RSS, Anon: m.Anon, File: m.File}))
	r.PeakRSS, r.PeakAnon, r.PeakFile = peak.RSS, peak.Anon, peak.File
	r.HWM = m.HWM
	return r, samples, nil
}

// scenario is one kind of load, run against each target in turn.
type scenario struct {
	// ID numbers the scenario as in the issue.
	ID int
	// Title describes it in tables.
	Title string
	// Runs holds the runs per target label, one per round.
	Runs map[string][]run
	// Streams is the number of concurrent streams of scenario 3.
	Streams int
	// Media holds scenario 7's re-hosts and range checks.
	Media *mediaResult
}

// bench holds what a benchmark needs.
type bench struct {
	opts    options
	targets []*target
	// restart restarts both Caddy processes (for scenario 3).
	restart func(ctx context.Context) error
	// pgIdle describes scenario pg's idle CPU, when measured, and then
	// its takeover rounds (-takeover), when run.
	pgIdle string
	logf   func(format string, args ...any)
}

// order returns the targets in the order of round i: alternating which
// goes first.
func (b *bench) order(i int) []*target {
	if i%2 == 0 {
		return b.targets
	}
	out := slices.Clone(b.targets)
	slices.Reverse(out)
	return out
}

// rateScenario runs a constant-rate scenario for every round and target.
func (b *bench) rateScenario(ctx context.Context, id int, title string, body []byte, stream bool, rate, minEvents int) (*scenario, error) {
	sc := &scenario{ID: id, Title: title, Runs: map[string][]run{}}
	for _, t := range b.targets {
		req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: body, Stream: stream, MinEvents: minEvents}
		if res := constantRate(ctx, t.client, req, rate, b.opts.warmup, b.opts.inflight, 30*time.Second); res.Errors > 0 {
			return nil, fmt.Errorf("scenario %d: warm-up against %s: %d errors, first: %s", id, t.Label(), res.Errors, res.FirstError)
		}
	}
	for i := range b.opts.rounds {
		for _, t := range b.order(i) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: body, Stream: stream, MinEvents: minEvents}
			r, _, err := measure(t, func() result {
				return constantRate(ctx, t.client, req, rate, b.opts.duration, b.opts.inflight, 30*time.Second)
			})
			if err != nil {
				return nil, err
			}
			b.logf("scenario %d round %d %-10s %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  CPU %6.0f µs/req  peak RSS %6.1f MiB  errors %d %s",
				id, i+1, t.Label(), r.RPS(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.99)),
				r.CPUPerRequest(), mib(r.PeakRSS), r.Errors, r.FirstError)
			sc.Runs[t.Label()] = append(sc.Runs[t.Label()], r)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return sc, nil
}

// closedScenario runs a closed-loop scenario (closedLoop, b.opts.conns
// connections) for every round and target.
func (b *bench) closedScenario(ctx context.Context, id int, title string, body []byte, stream bool, minEvents int) (*scenario, error) {
	sc := &scenario{ID: id, Title: title, Runs: map[string][]run{}}
	conns := b.opts.conns
	for _, t := range b.targets {
		req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: body, Stream: stream, MinEvents: minEvents}
		if res := closedLoop(ctx, t.client, req, conns, b.opts.warmup, 30*time.Second); res.Errors > 0 {
			return nil, fmt.Errorf("scenario %d: warm-up against %s: %d errors, first: %s", id, t.Label(), res.Errors, res.FirstError)
		}
	}
	for i := range b.opts.rounds {
		for _, t := range b.order(i) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			req := request{URL: t.proc.URL("/v1/chat/completions"), Key: t.key, Body: body, Stream: stream, MinEvents: minEvents}
			r, _, err := measure(t, func() result {
				return closedLoop(ctx, t.client, req, conns, b.opts.duration, 30*time.Second)
			})
			if err != nil {
				return nil, err
			}
			b.logf("scenario %d round %d %-10s %7.0f req/s  p50 %6.2f ms  p99 %7.2f ms  CPU %6.0f µs/req  peak RSS %6.1f MiB  errors %d %s",
				id, i+1, t.Label(), r.RPS(), ms(percentile(r.Latencies, 0.5)), ms(percentile(r.Latencies, 0.99)),
				r.CPUPerRequest(), mib(r.PeakRSS), r.Errors, r.FirstError)
			sc.Runs[t.Label()] = append(sc.Runs[t.Label()], r)
			time.Sleep(500 * time.Millisecond)
		}
	}
	return sc, nil
}

// slowScenario holds many slow streams open against fresh Caddy processes,
// for every round and target.
func (b *bench) slowScenario(ctx context.Context) (*scenario, error) {
	o := b.opts
	chunks := slowChunks(o.streamLife, o.streamDelay)
	body := chatBody(true, fmt.Sprintf(`"mock_chunks":%d,"mock_chunk_delay_ms":%d`, chunks, o.streamDelay.Milliseconds()))
	sc := &scenario{
		ID:      3,
		Title:   fmt.Sprintf("3. %d slow streams (1 event / %v, ~%v each)", o.streams, o.streamDelay, o.streamLife),
		Runs:    map[string][]run{},
		Streams: o.streams,
	}
	warm := chatBody(false, "")
	for i := range o.rounds {
		// Fresh processes, so that memory left by earlier rounds does not
		// hide what the streams take.
		if err := b.restart(ctx); err != nil {
			return nil, err
		}
		for _, t := range b.order(i) {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			url := t.proc.URL("/v1/chat/completions")
			if _, err := do(ctx, t.client, request{URL: url, Key: t.key, Body: warm}, nil); err != nil {
				return nil, fmt.Errorf("scenario 3: warm-up against %s: %v", t.Label(), err)
			}
			time.Sleep(time.Second)
			client := newClient(o.streams)
			req := request{URL: url, Key: t.key, Body: body, Stream: true}
			var sr slowResult
			r, samples, err := measure(t, func() result {
				time.Sleep(time.Second) // idle samples
				sr = slowStreams(ctx, client, req, o.streams, o.ramp, o.streamLife+30*time.Second)
				return sr.result
			})
			client.CloseIdleConnections()
			if err != nil {
				return nil, err
			}
			from := sr.Start.Add(o.ramp)
			if sr.AllOpen.After(from) {
				from = sr.AllOpen
			}
			to := sr.FirstDone
			r.IdleRSS = medianRSS(samples, time.Time{}, sr.Start)
			r.OpenRSS = medianRSS(samples, from, to)
			b.logf("scenario 3 round %d %-10s idle RSS %6.1f MiB  open RSS %6.1f MiB  peak %6.1f MiB  CPU %6.0f µs/stream  p50 %.2f s  errors %d %s",
				i+1, t.Label(), mib(r.IdleRSS), mib(r.OpenRSS), mib(r.PeakRSS), r.CPUPerRequest(),
				percentile(r.Latencies, 0.5).Seconds(), r.Errors, r.FirstError)
			if r.OpenRSS == 0 {
				b.logf("scenario 3 round %d %s: no RSS sample while all streams were open (all open at %v, first done at %v)",
					i+1, t.Label(), sr.AllOpen.Sub(sr.Start), sr.FirstDone.Sub(sr.Start))
			}
			sc.Runs[t.Label()] = append(sc.Runs[t.Label()], r)
		}
	}
	return sc, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(b int64) float64 { return float64(b) / (1 << 20) }
