package caddymodule

import (
	"fmt"
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
)

// parseProvider reads a `provider <name> { … }` block of the air option.
// The options every provider has are read here; the others belong to the
// provider's protocol, whose dialect module (namespace air.dialects)
// parses them once the block is read, so they may come before or after
// the protocol line. The block only parses: Provision checks the values.
func (a *App) parseProvider(d *caddyfile.Dispenser) error {
	p := &ProviderConfig{}
	if !d.Args(&p.Name) {
		return d.ArgErr()
	}
	var protocol string
	var rest []caddyfile.Token // the dialect's options
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "protocol":
			if !d.AllArgs(&protocol) {
				return d.ArgErr()
			}
		case "base_url", "endpoint":
			p.BaseURLs = append(p.BaseURLs, d.RemainingArgs()...)
		case "api_key":
			p.APIKeys = append(p.APIKeys, d.RemainingArgs()...)
		case "timeout":
			p.Timeout, err = parseDuration(d)
		case "try_timeout":
			p.TryTimeout, err = parseDuration(d)
		case "retries":
			var n int
			if n, err = parseInt(d); err == nil {
				p.Retries = &n
			}
		case "fail_duration":
			p.FailDuration, err = parseDuration(d)
		case "fail_window":
			p.FailWindow, err = parseDuration(d)
		case "cooldown":
			p.Cooldown, err = parseDuration(d)
		case "key_cooldown":
			p.KeyCooldown, err = parseDuration(d)
		case "failure_rate":
			var v string
			if !d.AllArgs(&v) {
				return d.ArgErr()
			}
			f, perr := strconv.ParseFloat(v, 64)
			if perr != nil {
				return d.Errf("failure_rate: want a number, got %q", v)
			}
			p.FailureRate = f
		case "min_requests":
			p.MinRequests, err = parsePositiveInt(d)
		case "max_concurrent":
			p.MaxConcurrent, err = parsePositiveInt(d)
		case "rpm":
			p.RPM, err = parsePositiveInt(d)
		case "tpm":
			p.TPM, err = parsePositiveInt(d)
		case "health_check":
			p.HealthCheck, err = parseHealthCheck(d)
		default:
			rest = append(rest, d.NextSegment()...)
		}
		if err != nil {
			return err
		}
	}
	if protocol == "" {
		return d.Errf("provider %s: protocol is required", p.Name)
	}
	raw, err := parseDialect(d, protocol, rest)
	if err != nil {
		return fmt.Errorf("provider %s: %w", p.Name, err)
	}
	p.DialectRaw = raw
	a.Providers = append(a.Providers, p)
	return nil
}

// parseDialect makes the dialect object of a provider of protocol, whose
// module parses the options rest that the provider block did not read.
func parseDialect(d *caddyfile.Dispenser, protocol string, rest []caddyfile.Token) ([]byte, error) {
	if err := airmod.CheckKnown("protocol", airmod.DialectNamespace, protocol); err != nil {
		return nil, d.Err(err.Error())
	}
	info, err := caddy.GetModule(airmod.DialectNamespace + "." + protocol)
	if err != nil {
		return nil, err
	}
	mod := info.New()
	sub := caddyfile.NewDispenser(rest)
	if um, ok := mod.(caddyfile.Unmarshaler); ok {
		if err := um.UnmarshalCaddyfile(sub); err != nil {
			return nil, err
		}
	} else if sub.Next() {
		return nil, airmod.NotASetting(sub, sub.Val(), protocol)
	}
	return caddyconfig.JSONModuleObject(mod, "protocol", protocol, nil), nil
}

// parseHealthCheck reads `health_check [<path>] [{ path, interval, timeout }]`.
func parseHealthCheck(d *caddyfile.Dispenser) (*HealthCheckConfig, error) {
	hc := &HealthCheckConfig{}
	if d.NextArg() {
		hc.Path = d.Val()
		if d.NextArg() {
			return nil, d.ArgErr()
		}
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "path":
			if !d.AllArgs(&hc.Path) {
				return nil, d.ArgErr()
			}
		case "interval":
			hc.Interval, err = parseDuration(d)
		case "timeout":
			hc.Timeout, err = parseDuration(d)
		default:
			return nil, d.Errf("unrecognized health_check option %q", d.Val())
		}
		if err != nil {
			return nil, err
		}
	}
	return hc, nil
}
