package caddymodule

import (
	"errors"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/responses"
)

// ResponsesConfig tunes the poller of background responses (`POST
// /v1/responses` with `"background": true`): each one whose create did not
// report its usage is polled from the upstream until it finishes, and
// billed then, unless a client's retrieval through the gateway saw it
// finished first.
type ResponsesConfig struct {
	// PollInterval is the wait before the first poll of a background
	// response, and the shortest between two. Default: 5s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// MaxPollInterval is the longest wait between two polls: between the
	// two bounds, the wait is an eighth of the response's age. Default: 1m.
	MaxPollInterval caddy.Duration `json:"max_poll_interval,omitempty"`
	// MaxAge is how long after its create a background response is
	// polled; one still unfinished then is recorded with outcome
	// `unfinished`, no usage and no cost. Default: 24h.
	MaxAge caddy.Duration `json:"max_age,omitempty"`
	// Lease is how long an instance owns a background response it claimed
	// to poll: no other instance polls it meanwhile, and one whose
	// instance died is taken over after it. It must exceed a poll's
	// timeout (30s). Default: 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
}

// validate checks the options set.
func (c *ResponsesConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.Lease != 0 && time.Duration(c.Lease) <= 30*time.Second {
		return errors.New("responses: lease must exceed the poll timeout (30s)")
	}
	if c.PollInterval < 0 || c.MaxPollInterval < 0 || c.MaxAge < 0 || c.Lease < 0 {
		return errors.New("responses: durations must be positive")
	}
	return nil
}

// pollerConfig is the responses.Config of c's durations (zero: defaults).
func (c *ResponsesConfig) pollerConfig() responses.Config {
	if c == nil {
		return responses.Config{}
	}
	return responses.Config{PollInterval: time.Duration(c.PollInterval), MaxPollInterval: time.Duration(c.MaxPollInterval),
		MaxAge: time.Duration(c.MaxAge), Lease: time.Duration(c.Lease)}
}
