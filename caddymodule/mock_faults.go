package caddymodule

import (
	"fmt"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// MockFault is one fault of an `air_mock` instance: a share of its API
// requests (chat, messages, responses, embeddings, images, videos and
// their polls, models) fails the way Mode says.
type MockFault struct {
	// Rate is the probability, from 0 to 1, that a request gets this fault.
	Rate float64 `json:"rate"`
	// Mode is an HTTP error status from 400 to 599, answered in the
	// protocol's error shape (429 and 503 with Retry-After); "hang" (no
	// answer until the client gives up, or 504 after Delay, default 10m);
	// "slow" (the answer after Delay, default 5s); "reset" (the
	// connection closed with a TCP RST, no answer); or "cut" (the answer
	// stopped mid-way: after two events of a stream, half of a body).
	Mode string `json:"mode"`
	// RetryAfter is the Retry-After of a 429 or 503, in whole seconds
	// rounded up. Default: 1s.
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`
	// Delay is the time to first byte of "slow" and the bound of "hang".
	Delay caddy.Duration `json:"delay,omitempty"`
	// For, if set, limits the fault to that long after the config was
	// loaded (a reload starts the window again).
	For caddy.Duration `json:"for,omitempty"`
}

// check checks the rates of m and of its faults, which are
// probabilities, whatever config set them (the Caddyfile or JSON).
func (m *Mock) check() error {
	if m.FailureRate < 0 || m.FailureRate > 1 {
		return fmt.Errorf("air_mock: failure_rate: want a number from 0 to 1, got %v", m.FailureRate)
	}
	for i, f := range m.Faults {
		if f.Rate < 0 || f.Rate > 1 {
			return fmt.Errorf("air_mock: fault %d: fault rate: want a number from 0 to 1, got %v", i, f.Rate)
		}
	}
	return nil
}

// providerFaults converts the configured faults for the mock provider.
func (m *Mock) providerFaults() ([]mockprovider.Fault, error) {
	out := make([]mockprovider.Fault, 0, len(m.Faults))
	for i, f := range m.Faults {
		mode, status, err := mockprovider.ParseFaultMode(f.Mode)
		if err != nil {
			return nil, fmt.Errorf("air_mock: fault %d: %w", i, err)
		}
		out = append(out, mockprovider.Fault{
			Rate:       f.Rate,
			Mode:       mode,
			Status:     status,
			RetryAfter: time.Duration(f.RetryAfter),
			Delay:      time.Duration(f.Delay),
			For:        time.Duration(f.For),
		})
	}
	return out, nil
}

// parseMockFault reads one `fault` of an air_mock block. Rate and mode
// come as two arguments, as a block, or both (the block wins):
//
//	fault 0.3 429
//	fault {
//		rate 0.3
//		mode 429
//		retry_after 2s
//	}
func parseMockFault(d *caddyfile.Dispenser) (MockFault, error) {
	var f MockFault
	args := d.RemainingArgs()
	switch len(args) {
	case 0:
	case 2:
		if err := setFaultRate(d, &f, args[0]); err != nil {
			return f, err
		}
		f.Mode = args[1]
	default:
		return f, d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "rate":
			var s string
			if !d.AllArgs(&s) {
				return f, d.ArgErr()
			}
			err = setFaultRate(d, &f, s)
		case "mode":
			if !d.AllArgs(&f.Mode) {
				return f, d.ArgErr()
			}
		case "retry_after":
			f.RetryAfter, err = parseDuration(d)
		case "delay":
			f.Delay, err = parseDuration(d)
		case "for":
			f.For, err = parseDuration(d)
		default:
			return f, d.Errf("unrecognized fault option %q", d.Val())
		}
		if err != nil {
			return f, err
		}
	}
	if f.Mode == "" {
		return f, d.Err("fault: mode is required")
	}
	if _, _, err := mockprovider.ParseFaultMode(f.Mode); err != nil {
		return f, d.Errf("fault: %v", err)
	}
	return f, nil
}

// setFaultRate parses a fault's rate, a number from 0 to 1.
func setFaultRate(d *caddyfile.Dispenser, f *MockFault, s string) error {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return d.Errf("fault rate: want a number from 0 to 1, got %q", s)
	}
	f.Rate = r
	return nil
}
