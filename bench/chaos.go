package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// chaosScenario is the scenario number of the chaos run; -scenarios takes
// it as "chaos" or "8".
const chaosScenario = 8

// chaosFallbackModel is the fallback model of the two-deployment config.
const chaosFallbackModel = benchModel + "-fallback"

// chaosConfig is one gateway config the chaos run compares.
type chaosConfig struct {
	// Label names it in the table.
	Label string
	// Models is the Caddyfile text of the air block's models, with %[1]s
	// and %[2]s standing for the providers of upstreams A and B.
	Models string
}

// chaosConfigs are (a) one deployment on upstream A and (b) two weighted
// deployments, A and B, with a fallback model on B, in the routing syntax
// of issue 19.
var chaosConfigs = []chaosConfig{
	{Label: "(a) one deployment: A", Models: `model ` + benchModel + ` %[1]s`},
	{Label: "(b) A and B, weight 1:1, fallback", Models: `model ` + benchModel + ` {
			to %[1]s ` + benchModel + ` weight 1
			to %[2]s ` + benchModel + ` weight 1
			fallback ` + chaosFallbackModel + `
		}
		model ` + chaosFallbackModel + ` %[2]s`},
}

// chaosPricesJSON prices the chaos run's models.
const chaosPricesJSON = `{
  "currency": "USD",
  "models": {
    "` + benchModel + `": {"tiers": [{"input": "0.80", "output": "2.00"}]},
    "` + chaosFallbackModel + `": {"tiers": [{"input": "0.80", "output": "2.00"}]}
  }
}
`

// parseChaosFaults reads -chaos-faults: comma-separated mode:rate pairs,
// such as "429:0.1,500:0.1,reset:0.1", each lasting d.
func parseChaosFaults(spec string, d time.Duration) ([]mockprovider.Fault, error) {
	var faults []mockprovider.Fault
	for _, part := range strings.Split(spec, ",") {
		mode, rate, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("-chaos-faults: %q is not mode:rate", part)
		}
		m, status, err := mockprovider.ParseFaultMode(mode)
		if err != nil {
			return nil, fmt.Errorf("-chaos-faults: %v", err)
		}
		r, err := strconv.ParseFloat(rate, 64)
		if err != nil {
			return nil, fmt.Errorf("-chaos-faults: rate %q: %v", rate, err)
		}
		faults = append(faults, mockprovider.Fault{Rate: r, Mode: m, Status: status, For: d})
	}
	c := mockprovider.Config{Faults: faults}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("-chaos-faults: %v", err)
	}
	return faults, nil
}

// chaosUpstream is one mock provider on loopback whose faults can be
// swapped between runs, counting the requests it got and failed.
type chaosUpstream struct {
	port     int
	srv      *http.Server
	mock     atomic.Pointer[mockprovider.Handler]
	requests atomic.Int64
	failed   atomic.Int64
}

// startChaosUpstream serves a healthy mock on a free loopback port.
func startChaosUpstream() (*chaosUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &chaosUpstream{port: ln.Addr().(*net.TCPAddr).Port}
	u.set(nil, 0)
	u.srv = &http.Server{Handler: u, ReadHeaderTimeout: 10 * time.Second}
	go u.srv.Serve(ln)
	return u, nil
}

// set installs a fresh mock with faults (their window starts now) and
// resets the counters; the previous mock's held requests are released.
func (u *chaosUpstream) set(faults []mockprovider.Fault, seed uint64) {
	old := u.mock.Swap(mockprovider.New(mockprovider.Config{APIKey: upstreamKey, Faults: faults, FaultSeed: seed}))
	if old != nil {
		old.Close()
	}
	u.requests.Store(0)
	u.failed.Store(0)
}

// ServeHTTP counts the request and lets the current mock answer it.
func (u *chaosUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	sw := &statusRecorder{ResponseWriter: w}
	defer func() {
		if sw.status == 0 || sw.status >= 400 || sw.cut {
			u.failed.Add(1)
		}
	}()
	u.mock.Load().ServeHTTP(sw, r)
}

// close stops the server and the mock.
func (u *chaosUpstream) close() {
	_ = u.srv.Close()
	u.mock.Load().Close()
}

// statusRecorder remembers the status written through it; a response
// that never got one, or whose connection was taken over (reset, cut),
// is a failure.
type statusRecorder struct {
	http.ResponseWriter
	status int
	cut    bool
}

// WriteHeader records the first status and passes it on.
func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

// Write records an implicit 200 and passes b on.
func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Hijack marks the response failed (the mock takes the connection over
// only to reset or cut it) and hands the connection over.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.cut = true
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController flush the writer underneath.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// chaosRun is one config's run.
type chaosRun struct {
	Config chaosConfig
	// Skipped says why the run did not happen (the config did not load).
	Skipped string
	chaosResult
	// A and B count the requests each upstream got; AFailed those A
	// failed.
	A, B, AFailed int64
}

// runChaos runs the chaos scenario: for each config, a gateway in front of
// upstreams A and B, under constant load while A fails a share of its
// requests. It returns the table of results.
func runChaos(ctx context.Context, o options, tmp string, logf func(string, ...any)) (string, error) {
	faults, err := parseChaosFaults(o.chaosFaults, o.chaosDuration)
	if err != nil {
		return "", err
	}
	a, err := startChaosUpstream()
	if err != nil {
		return "", err
	}
	defer a.close()
	b, err := startChaosUpstream()
	if err != nil {
		return "", err
	}
	defer b.close()
	body := chatBody(true, `"mock_chunks":8`)
	var runs []chaosRun
	for i, c := range chaosConfigs {
		run := chaosRun{Config: c}
		p, err := chaosProcess(o.caddyBin, tmp, i, c, a.port, b.port)
		if err != nil {
			return "", err
		}
		logf("chaos %s: starting caddy-air on 127.0.0.1:%d", c.Label, p.Port)
		if err := p.Start(ctx); err != nil {
			run.Skipped = "did not load: " + startError(err.Error())
			logf("chaos %s: %v", c.Label, err)
			runs = append(runs, run)
			continue
		}
		key, err := createKey(ctx, p)
		if err != nil {
			p.Stop()
			return "", err
		}
		client := newClient(o.inflight)
		req := request{URL: p.URL("/v1/chat/completions"), Key: key, Body: body, Stream: true}
		a.set(nil, 0)
		b.set(nil, 0)
		if w := chaosRate(ctx, client, req, o.chaosRate, o.warmup, o.inflight, 30*time.Second); w.Errors() > 0 {
			p.Stop()
			return "", fmt.Errorf("chaos %s: warm-up with healthy upstreams: %s", c.Label, w.KindsString())
		}
		a.set(faults, o.chaosSeed)
		b.set(nil, 0)
		run.chaosResult = chaosRate(ctx, client, req, o.chaosRate, o.chaosDuration, o.inflight, 30*time.Second)
		run.A, run.B, run.AFailed = a.requests.Load(), b.requests.Load(), a.failed.Load()
		client.CloseIdleConnections()
		p.Stop()
		logf("chaos %s: %d ok, %d errors (%.2f%%), p99 TTFB %.2f ms; upstream A %d requests (%d failed), B %d",
			c.Label, run.OK, run.Errors(), run.ErrorRate(), ms(percentile(run.TTFB, 0.99)), run.A, run.AFailed, run.B)
		runs = append(runs, run)
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
	return chaosTable(o, runs), nil
}

// chaosProcess prepares the caddy-air process of config c.
func chaosProcess(bin, tmp string, i int, c chaosConfig, portA, portB int) (*caddyProcess, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	port, admin := ports[0], ports[1]
	return prepareProcess(bin, tmp, fmt.Sprintf("chaos-%d", i), port, admin, func(dir string) (string, error) {
		prices, err := writeFile(dir, "prices.json", chaosPricesJSON)
		if err != nil {
			return "", err
		}
		return writeFile(dir, "Caddyfile", chaosCaddyfile(admin, port, portA, portB, filepath.Join(dir, "badger"), prices, c))
	})
}

// chaosCaddyfile is caddy-air with providers mock-a and mock-b on the two
// upstreams and the models of c.
func chaosCaddyfile(adminPort, port, portA, portB int, dataDir, pricesFile string, c chaosConfig) string {
	provider := func(name string, upPort int) string {
		return fmt.Sprintf(`provider %s {
			protocol openai
			base_url http://127.0.0.1:%d/v1
			api_key %s
		}`, name, upPort, upstreamKey)
	}
	return fmt.Sprintf("{\n"+globalOptions+`	air {
		storage badger %s
		prices %s
		%s
		%s
		%s
	}
}

http://:%d {
	bind 127.0.0.1
	route /v1/* {
		air_auth
		air_chat /v1/chat/completions
	}
}
`, adminPort, dataDir, pricesFile, provider("mock-a", portA), provider("mock-b", portB),
		fmt.Sprintf(c.Models, "mock-a", "mock-b"), port)
}

// chaosTable renders the runs as a Markdown table with its parameters.
func chaosTable(o options, runs []chaosRun) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "Chaos: upstream A fails %s of requests (%s) for %v at %d streamed chat req/s (8 chunks), fault seed %d; B is healthy.\n\n",
		faultShare(o.chaosFaults), o.chaosFaults, o.chaosDuration, o.chaosRate, o.chaosSeed)
	sb.WriteString("| config | requests | client errors | error rate | p50 TTFB | p99 TTFB | p99 total | upstream A (failed) | upstream B | client errors by kind |\n")
	sb.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range runs {
		if r.Skipped != "" {
			fmt.Fprintf(&sb, "| %s | not run: %s | | | | | | | | |\n", r.Config.Label, strings.ReplaceAll(r.Skipped, "|", "/"))
			continue
		}
		fmt.Fprintf(&sb, "| %s | %d | %d | %.2f %% | %.2f ms | %.2f ms | %.2f ms | %d (%d) | %d | %s |\n",
			r.Config.Label, r.OK+r.Errors(), r.Errors(), r.ErrorRate(),
			ms(percentile(r.TTFB, 0.5)), ms(percentile(r.TTFB, 0.99)), ms(percentile(r.Total, 0.99)),
			r.A, r.AFailed, r.B, r.KindsString())
	}
	return sb.String()
}

// faultShare is the total rate of a -chaos-faults spec, as a percentage.
func faultShare(spec string) string {
	faults, err := parseChaosFaults(spec, 0)
	if err != nil {
		return "?"
	}
	sum := 0.0
	for _, f := range faults {
		sum += f.Rate
	}
	return strconv.FormatFloat(math.Round(1e4*sum)/100, 'f', -1, 64) + " %"
}

// startError picks the line of a failed start that says why: the message
// of Caddy's first error log entry, else the first line.
func startError(s string) string {
	for _, line := range strings.Split(s, "\n") {
		var entry struct{ Level, Msg string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Level == "error" {
			return entry.Msg
		}
	}
	s, _, _ = strings.Cut(s, "\n")
	return s
}
