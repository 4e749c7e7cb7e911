package caddymodule

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/reqlog"
)

// maxRequestLogBody bounds request_logs' max_body.
const maxRequestLogBody = 16 << 20

// RequestLogsConfig bounds the request logs kept for the keys and teams
// that have them on (`log_requests`); it switches nothing on by itself.
type RequestLogsConfig struct {
	// MaxBody is the most bytes kept of each body (request, answer); a
	// longer one is cut and marked truncated. Default: 64KiB; at most
	// 16MiB.
	MaxBody int64 `json:"max_body,omitempty"`
	// TTL is how long a log is kept. Default: 7d.
	TTL caddy.Duration `json:"ttl,omitempty"`
	// Redact are regular expressions (Go syntax) whose matches are
	// replaced by "[redacted]" in both bodies, besides the built-in
	// patterns (sk-… keys and bearer tokens).
	Redact []string `json:"redact,omitempty"`
}

// requestLogBounds are a config's request-log bounds, ready for use.
type requestLogBounds struct {
	cap int
	ttl time.Duration
	red *reqlog.Redactor
}

// bounds checks c and returns its bounds, defaults filled in.
func (c *RequestLogsConfig) bounds() (*requestLogBounds, error) {
	b := &requestLogBounds{cap: reqlogCap, ttl: reqlogTTL}
	var extra []string
	if c != nil {
		if c.MaxBody < 0 || c.MaxBody > maxRequestLogBody {
			return nil, fmt.Errorf("request_logs: max_body must be between 1 and %d bytes", maxRequestLogBody)
		}
		if c.TTL < 0 {
			return nil, errors.New("request_logs: ttl must be positive")
		}
		if c.MaxBody > 0 {
			b.cap = int(c.MaxBody)
		}
		if c.TTL > 0 {
			b.ttl = time.Duration(c.TTL)
		}
		extra = c.Redact
	}
	red, err := reqlog.NewRedactor(extra...)
	if err != nil {
		return nil, fmt.Errorf("request_logs: redact: %w", err)
	}
	b.red = red
	return b, nil
}
