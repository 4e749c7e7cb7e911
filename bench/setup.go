package main

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// startTargets serves the mock provider on loopback and starts the Caddy
// processes under test in front of it: bare Caddy, caddy-air and, with
// -metrics-off, caddy-air with `metrics off`, with -strict caddy-air with
// `ledger_durability strict`; it creates their keys. It
// returns the bench over those targets, the upstream's port and a function
// that stops everything it started, to call whatever the error.
func startTargets(ctx context.Context, o options, tmp string, logf func(string, ...any)) (b *bench, upPort int, stopAll func(), err error) {
	var stops []func()
	stopAll = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, stopAll, err
	}
	upstream := &http.Server{
		Handler:           mockprovider.New(mockprovider.Config{APIKey: upstreamKey, VideoDuration: mockVideoDuration}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go upstream.Serve(ln)
	stops = append(stops, func() { upstream.Close() })
	upPort = ln.Addr().(*net.TCPAddr).Port

	bare, air, err := newProcesses(o.caddyBin, tmp, upPort, o.airOptions)
	if err != nil {
		return nil, 0, stopAll, err
	}
	stops = append(stops, bare.Stop, air.Stop)
	procs := []*caddyProcess{bare, air}
	var noMetrics *caddyProcess
	if o.metricsOff {
		if noMetrics, err = newAirProcess(o.caddyBin, tmp, noMetricsName, upPort, "", o.airOptions+"\n\t\tmetrics off"); err != nil {
			return nil, 0, stopAll, err
		}
		stops = append(stops, noMetrics.Stop)
		procs = append(procs, noMetrics)
	}
	if o.strict {
		strict, err := newAirProcess(o.caddyBin, tmp, strictName, upPort, "", o.airOptions+"\n\t\tledger_durability strict")
		if err != nil {
			return nil, 0, stopAll, err
		}
		stops = append(stops, strict.Stop)
		procs = append(procs, strict)
	}
	for _, p := range procs {
		logf("starting %s Caddy on 127.0.0.1:%d (admin %d)", p.Name, p.Port, p.AdminPort)
		if err := p.Start(ctx); err != nil {
			return nil, 0, stopAll, err
		}
	}
	b = &bench{opts: o, logf: logf}
	for _, p := range procs {
		key := upstreamKey
		if p != bare {
			if key, err = createKey(ctx, p); err != nil {
				return nil, 0, stopAll, err
			}
		}
		b.targets = append(b.targets, &target{proc: p, key: key, client: newClient(o.inflight)})
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
	return b, upPort, stopAll, nil
}

// newProcesses prepares the bare and the caddy-air Caddy processes, with
// their configs and working directories under tmp.
func newProcesses(bin, tmp string, upPort int, airOptions string) (bare, air *caddyProcess, err error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, nil, err
	}
	bare, err = newBareProcessOn(bin, tmp, "bare", ports[0], ports[1], upPort)
	if err != nil {
		return nil, nil, err
	}
	air, err = newAirProcessOn(bin, tmp, "air", ports[2], ports[3], upPort, "", airOptions)
	return bare, air, err
}

// newBareProcess prepares another bare Caddy process, on fresh ports, in
// front of the upstream on upPort.
func newBareProcess(bin, tmp, name string, upPort int) (*caddyProcess, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return newBareProcessOn(bin, tmp, name, ports[0], ports[1], upPort)
}

// newBareProcessOn prepares a bare Caddy process named name (reverse_proxy
// to the upstream, file_server over caddy-air's media directory), its
// config and working directory under tmp.
func newBareProcessOn(bin, tmp, name string, port, admin, upPort int) (*caddyProcess, error) {
	media := filepath.Join(tmp, "air", "badger", mediaDir)
	return prepareProcess(bin, tmp, name, port, admin, func(dir string) (string, error) {
		return writeFile(dir, "Caddyfile", bareCaddyfile(admin, port, upPort, media))
	})
}

// noMetricsName names the caddy-air process with `metrics off`, and
// strictName the one with `ledger_durability strict`.
const (
	noMetricsName = "air-nometrics"
	strictName    = "air-strict"
)

// newAirProcess prepares another caddy-air process, on fresh ports, with
// storage as in newAirProcessOn.
func newAirProcess(bin, tmp, name string, upPort int, storage, airOptions string) (*caddyProcess, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return newAirProcessOn(bin, tmp, name, ports[0], ports[1], upPort, storage, airOptions)
}

// newAirProcessOn prepares a caddy-air process named name, its config and
// working directory under tmp. storage is the arguments of its storage
// line; empty means Badger in its working directory.
func newAirProcessOn(bin, tmp, name string, port, admin, upPort int, storage, airOptions string) (*caddyProcess, error) {
	return prepareProcess(bin, tmp, name, port, admin, func(dir string) (string, error) {
		prices, err := writeFile(dir, "prices.json", pricesJSON)
		if err != nil {
			return "", err
		}
		if storage == "" {
			storage = "badger " + filepath.Join(dir, "badger")
		}
		return writeFile(dir, "Caddyfile", airCaddyfile(admin, port, upPort, storage, prices, airOptions))
	})
}
