package caddymodule

import (
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/tasks"
)

// checkConfig checks the ranges and combinations of the air app's
// settings that Validate's checks do not cover, whatever wrote the
// config: the Caddyfile only parses (caddyfile_*.go), so a Caddyfile, a
// JSON config and an admin /load get the same checks and messages. The
// storage backend and the providers' dialects check their own settings
// when they are loaded. It runs first in Provision, before defaults fill
// the zero values in and before the routing table is built from the
// providers and models.
func (a *App) checkConfig() error {
	if err := positive("ledger_retention", a.LedgerRetention); err != nil {
		return err
	}
	for _, p := range a.Providers {
		if err := p.check(); err != nil {
			return err
		}
	}
	for _, m := range a.Models {
		if err := m.check(); err != nil {
			return err
		}
	}
	if t := a.Tasks; t != nil {
		if err := positive("tasks: ttl", t.TTL, "tasks: media_ttl", t.MediaTTL, "tasks: poll_interval", t.PollInterval); err != nil {
			return err
		}
	}
	if h := a.Health; h != nil {
		if err := positive("health: window", h.Window, "health: max_ledger_lag", h.MaxLedgerLag); err != nil {
			return err
		}
	}
	return nil
}

// positive checks durations given as name, value pairs: none may be
// negative (zero is unset, their default).
func positive(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if d := pairs[i+1].(caddy.Duration); d < 0 {
			return fmt.Errorf("%s: bad duration %s (want a positive one)", pairs[i], time.Duration(d))
		}
	}
	return nil
}

// check checks a provider's ranges: no negative count, limit or
// duration, and a failure rate in (0, 1] (zero is the default).
func (p *ProviderConfig) check() error {
	switch {
	case p.Retries != nil && *p.Retries < 0:
		return fmt.Errorf("provider %s: retries: want a non-negative integer, got %d", p.Name, *p.Retries)
	case p.FailureRate < 0 || p.FailureRate > 1:
		return fmt.Errorf("provider %s: failure_rate: want a number in (0, 1], got %v", p.Name, p.FailureRate)
	case p.MinRequests < 0 || p.MaxConcurrent < 0 || p.RPM < 0 || p.TPM < 0:
		return fmt.Errorf("provider %s: min_requests, max_concurrent, rpm and tpm want positive integers", p.Name)
	}
	err := positive("timeout", p.Timeout, "try_timeout", p.TryTimeout, "fail_duration", p.FailDuration,
		"fail_window", p.FailWindow, "cooldown", p.Cooldown, "key_cooldown", p.KeyCooldown)
	if hc := p.HealthCheck; err == nil && hc != nil {
		err = positive("health_check interval", hc.Interval, "health_check timeout", hc.Timeout)
	}
	if err != nil {
		return fmt.Errorf("provider %s: %w", p.Name, err)
	}
	return nil
}

// check checks a model: it names a provider or has deployments, not
// both; a known lb_policy; no negative duration or token count.
func (m *ModelConfig) check() error {
	switch {
	case m.Provider == "" && len(m.Deployments) == 0:
		return fmt.Errorf("model %s: name a provider on its line or give it `to` lines", m.Pattern)
	case m.Provider != "" && len(m.Deployments) > 0:
		return fmt.Errorf("model %s: name a provider on its line or give it `to` lines, not both", m.Pattern)
	case m.MaxOutputTokens < 0:
		return fmt.Errorf("model %s: max_output_tokens: want a positive integer, got %d", m.Pattern, m.MaxOutputTokens)
	}
	switch m.LBPolicy {
	case "", providers.PolicyWeightedRandom, providers.PolicyRoundRobin, providers.PolicyLeastRequests, providers.PolicyLowestLatency:
	default:
		return fmt.Errorf("model %s: lb_policy: unknown policy %q (weighted_random, round_robin, least_requests, lowest_latency)", m.Pattern, m.LBPolicy)
	}
	if err := positive("typical_duration", m.TypicalDuration); err != nil {
		return fmt.Errorf("model %s: %w", m.Pattern, err)
	}
	for _, dc := range m.Deployments {
		if dc.Weight < 0 || dc.MaxConcurrent < 0 || dc.RPM < 0 || dc.TPM < 0 {
			return fmt.Errorf("model %s: to %s: weight, max_concurrent, rpm and tpm want positive numbers", m.Pattern, dc.Provider)
		}
	}
	return nil
}

// Validate checks the configuration.
func (a *App) Validate() error {
	if _, err := a.durability(); err != nil {
		return err
	}
	if a.LedgerCommitInterval != nil && *a.LedgerCommitInterval < 0 {
		return errors.New("ledger_commit_interval must not be negative")
	}
	if a.MaxRequestBody < 0 {
		return errors.New("max_request_body must be positive")
	}
	if a.MinFreeSpace < 0 {
		return errors.New("min_free_space must be positive")
	}
	if a.MaxJSONDepth < 0 {
		return errors.New("max_json_depth must be positive")
	}
	if err := a.Responses.validate(); err != nil {
		return err
	}
	if err := a.Health.validate(); err != nil {
		return err
	}
	if err := a.Alerts.validate(); err != nil {
		return err
	}
	if err := a.Batches.validate(); err != nil {
		return err
	}
	if a.Tasks != nil && a.Tasks.Lease < 0 {
		return errors.New("tasks: lease must be positive")
	}
	if a.Tasks != nil && a.Tasks.MaxConcurrentCreates < 0 {
		return errors.New("tasks: max_concurrent_creates must be positive")
	}
	if a.Tasks != nil {
		if err := tasks.CheckMediaFetchAllow(a.Tasks.MediaFetchAllow); err != nil {
			return fmt.Errorf("tasks: %v", err)
		}
	}
	if a.MaxBufferedBodies < a.MaxRequestBody {
		return fmt.Errorf("max_buffered_bodies (%d) must be at least max_request_body (%d)", a.MaxBufferedBodies, a.MaxRequestBody)
	}
	return nil
}
