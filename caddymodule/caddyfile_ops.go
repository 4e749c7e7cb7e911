package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

// parseHealth reads the `health` block of the air option:
//
//	health {
//		window <duration>
//		min_success_rate <0..1>
//		min_attempts <n>
//		min_clients <n>
//		max_ledger_lag <duration>
//	}
func (a *App) parseHealth(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	a.Health = &HealthConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "window":
			a.Health.Window, err = parseDuration(d)
		case "max_ledger_lag":
			a.Health.MaxLedgerLag, err = parseDuration(d)
		case "min_attempts":
			var n int
			n, err = parsePositiveInt(d)
			a.Health.MinAttempts = int64(n)
		case "min_clients":
			var n int
			n, err = parsePositiveInt(d)
			a.Health.MinClients = int64(n)
		case "min_success_rate":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			r, perr := strconv.ParseFloat(s, 64)
			if perr != nil {
				return d.Errf("min_success_rate: want a number from 0 to 1, got %q", s)
			}
			a.Health.MinSuccessRate = &r
		default:
			return d.Errf("unrecognized health option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if err := a.Health.validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// parseMetrics reads the metrics option:
//
//	metrics off
//	metrics {
//		per_user
//	}
func (a *App) parseMetrics(d *caddyfile.Dispenser) error {
	a.Metrics = &MetricsConfig{}
	if d.NextArg() {
		if d.Val() != "off" {
			return d.Errf("metrics: unknown argument %q (want off, or a block)", d.Val())
		}
		a.Metrics.Off = true
		if d.NextArg() {
			return d.ArgErr()
		}
		if d.NextBlock(d.Nesting()) {
			return d.Err("metrics off takes no block")
		}
		return nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "per_user":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.Metrics.PerUser = true
		case "off":
			if d.NextArg() {
				return d.ArgErr()
			}
			a.Metrics.Off = true
		default:
			return d.Errf("unrecognized metrics option %q", d.Val())
		}
	}
	return nil
}

// parseAlerts reads the `alerts` block:
//
//	alerts {
//		webhook <name> <url> {
//			secret <secret>
//			events <kind>...
//			format json|slack
//		}
//		key_expiry_lead <duration>
//		check_interval <duration>
//		queue_size <n>
//	}
func (a *App) parseAlerts(d *caddyfile.Dispenser) error {
	if d.NextArg() {
		return d.ArgErr()
	}
	if a.Alerts == nil {
		a.Alerts = &AlertsConfig{}
	}
	c := a.Alerts
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "webhook":
			w := &WebhookConfig{}
			if !d.Args(&w.Name, &w.URL) || d.NextArg() {
				return d.ArgErr()
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				switch d.Val() {
				case "secret":
					if !d.AllArgs(&w.Secret) {
						return d.ArgErr()
					}
				case "events":
					w.Events = d.RemainingArgs()
					if len(w.Events) == 0 {
						return d.ArgErr()
					}
				case "format":
					if !d.AllArgs(&w.Format) {
						return d.ArgErr()
					}
				default:
					return d.Errf("unrecognized webhook option %q", d.Val())
				}
			}
			c.Webhooks = append(c.Webhooks, w)
		case "key_expiry_lead":
			c.KeyExpiryLead, err = parseDuration(d)
		case "check_interval":
			c.CheckInterval, err = parseDuration(d)
		case "queue_size":
			c.QueueSize, err = parsePositiveInt(d)
		default:
			return d.Errf("unrecognized alerts option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if err := c.validate(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}

// parseRequestLogs reads the `request_logs { … }` block of the air option.
func (a *App) parseRequestLogs(d *caddyfile.Dispenser) error {
	a.RequestLogs = &RequestLogsConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "max_body":
			a.RequestLogs.MaxBody, err = parseSize(d)
		case "ttl":
			a.RequestLogs.TTL, err = parseDuration(d)
		case "redact":
			res := d.RemainingArgs()
			if len(res) == 0 {
				return d.ArgErr()
			}
			a.RequestLogs.Redact = append(a.RequestLogs.Redact, res...)
		default:
			return d.Errf("unrecognized request_logs option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if _, err := a.RequestLogs.bounds(); err != nil {
		return d.Err(err.Error())
	}
	return nil
}
