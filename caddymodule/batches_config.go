package caddymodule

import (
	"errors"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/batches"
)

// BatchesConfig tunes the files and batches service (`air_batches`):
// the files users upload, and the batches the gateway polls and bills.
type BatchesConfig struct {
	// MaxFileSize bounds an uploaded file, in bytes; a larger upload gets
	// 413 file_too_large. Default: 100MiB.
	MaxFileSize int64 `json:"max_file_size,omitempty"`
	// MaxFiles bounds the files one user holds at once (uploads and the
	// batches' output and error files); an upload beyond gets 429
	// too_many_files. Default: 100.
	MaxFiles int `json:"max_files,omitempty"`
	// FileTTL is how long a file, and a batch, is kept. It must exceed
	// 26h, the longest a batch is polled (its 24 h completion window, and
	// the provider's lateness). Default: 168h (7 days).
	FileTTL caddy.Duration `json:"file_ttl,omitempty"`
	// MaxLines bounds the requests of one batch. Default: 50000.
	MaxLines int `json:"max_lines,omitempty"`
	// PollInterval is how often a running batch is polled upstream; it is
	// also the first backoff step after an error. Default: 10s.
	PollInterval caddy.Duration `json:"poll_interval,omitempty"`
	// Lease is how long an instance owns a batch it claimed: no other
	// instance polls or bills it meanwhile, and one whose instance died is
	// taken over after it. It must exceed the upstream timeout (30s).
	// Default: 2m.
	Lease caddy.Duration `json:"lease,omitempty"`
}

// validate checks the options set.
func (c *BatchesConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.MaxFileSize < 0 || c.MaxFiles < 0 || c.MaxLines < 0 {
		return errors.New("batches: max_file_size, max_files and max_lines must be positive")
	}
	if c.FileTTL < 0 || c.PollInterval < 0 || c.Lease < 0 {
		return errors.New("batches: durations must be positive")
	}
	if c.Lease != 0 && time.Duration(c.Lease) <= 30*time.Second {
		return errors.New("batches: lease must exceed the upstream timeout (30s)")
	}
	if c.FileTTL != 0 && time.Duration(c.FileTTL) <= batches.DefaultMaxRunning {
		return errors.New("batches: file_ttl must exceed the longest a batch is polled (26h)")
	}
	return nil
}

// serviceConfig is the batches.Config of c's settings (zero: defaults).
func (c *BatchesConfig) serviceConfig() batches.Config {
	if c == nil {
		return batches.Config{}
	}
	return batches.Config{MaxFileBytes: c.MaxFileSize, MaxFiles: c.MaxFiles, FileTTL: time.Duration(c.FileTTL),
		MaxLines: c.MaxLines, PollInterval: time.Duration(c.PollInterval), Lease: time.Duration(c.Lease)}
}
