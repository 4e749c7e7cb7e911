package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parseTo reads a model's `to <provider> [<upstream_model>] [weight <n>]
// [keys <i>…] [max_concurrent <n>] [rpm <n>] [tpm <n>]` line.
func parseTo(d *caddyfile.Dispenser) (*DeploymentConfig, error) {
	args := d.RemainingArgs()
	if len(args) == 0 {
		return nil, d.ArgErr()
	}
	dc := &DeploymentConfig{Provider: args[0]}
	rest := args[1:]
	if len(rest) > 0 && !toOption(rest[0]) {
		dc.UpstreamModel, rest = rest[0], rest[1:]
	}
	for len(rest) > 0 {
		opt := rest[0]
		rest = rest[1:]
		var vals []string
		for len(rest) > 0 && !toOption(rest[0]) {
			vals, rest = append(vals, rest[0]), rest[1:]
		}
		if len(vals) == 0 || (opt != "keys" && len(vals) != 1) {
			return nil, d.Errf("to %s: %s wants %s", dc.Provider, opt, map[bool]string{true: "key indexes", false: "one number"}[opt == "keys"])
		}
		nums := make([]int, len(vals))
		for i, v := range vals {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || (opt != "keys" && n == 0) {
				return nil, d.Errf("to %s: %s: bad number %q", dc.Provider, opt, v)
			}
			nums[i] = n
		}
		switch opt {
		case "weight":
			dc.Weight = nums[0]
		case "keys":
			dc.Keys = nums
		case "max_concurrent":
			dc.MaxConcurrent = nums[0]
		case "rpm":
			dc.RPM = nums[0]
		case "tpm":
			dc.TPM = nums[0]
		default:
			return nil, d.Errf("to %s: unknown option %q", dc.Provider, opt)
		}
	}
	return dc, nil
}

// toOption reports a word that starts an option of a `to` line.
func toOption(s string) bool {
	switch s {
	case "weight", "keys", "max_concurrent", "rpm", "tpm":
		return true
	}
	return false
}

func (a *App) parseModel(d *caddyfile.Dispenser) error {
	m := &ModelConfig{}
	args := d.RemainingArgs()
	switch len(args) {
	case 3:
		m.UpstreamModel = args[2]
		fallthrough
	case 2:
		m.Provider = args[1]
		fallthrough
	case 1:
		m.Pattern = args[0]
	default:
		return d.Errf("model: want <id|glob> [<provider> [<upstream_model>]], got %d arguments", len(args))
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "to":
			var dc *DeploymentConfig
			if dc, err = parseTo(d); err == nil {
				m.Deployments = append(m.Deployments, dc)
			}
		case "fallback":
			fs := d.RemainingArgs()
			if len(fs) == 0 {
				return d.ArgErr()
			}
			m.Fallbacks = append(m.Fallbacks, fs...)
		case "lb_policy":
			if !d.AllArgs(&m.LBPolicy) {
				return d.ArgErr()
			}
		case "kind":
			if !d.AllArgs(&m.Kind) {
				return d.ArgErr()
			}
		case "sizes":
			m.Sizes = append(m.Sizes, d.RemainingArgs()...)
		case "formats":
			fs := d.RemainingArgs()
			if len(fs) == 0 {
				return d.ArgErr()
			}
			m.Formats = append(m.Formats, fs...)
		case "typical_duration":
			m.TypicalDuration, err = parseDuration(d)
		case "max_output_tokens":
			m.MaxOutputTokens, err = parsePositiveInt(d)
		case "drop_params":
			if d.NextArg() {
				return d.ArgErr()
			}
			m.DropParams = true
		default:
			return d.Errf("unrecognized model option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	a.Models = append(a.Models, m)
	return nil
}
