package caddymodule

import (
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/alerts"
)

// Defaults of the alerts.
const (
	defaultKeyExpiryLead      = 72 * time.Hour
	defaultAlertCheckInterval = 30 * time.Second
)

// AlertsConfig configures the alerts: what raises them and the webhooks
// that receive them.
type AlertsConfig struct {
	// Webhooks receive the alerts. Without any, alerts are still raised
	// and shown in the console.
	Webhooks []*WebhookConfig `json:"webhooks,omitempty"`
	// KeyExpiryLead is how long before a key expires its key_expiring
	// alert is raised. Default: 72h.
	KeyExpiryLead caddy.Duration `json:"key_expiry_lead,omitempty"`
	// CheckInterval is how often budgets, the ledger and key expiries are
	// checked. Default: 30s.
	CheckInterval caddy.Duration `json:"check_interval,omitempty"`
	// QueueSize bounds the alerts raised and not yet stored; more are
	// dropped and counted in air_alerts_dropped_total. Default: 1024.
	QueueSize int `json:"queue_size,omitempty"`
}

// WebhookConfig is one webhook.
type WebhookConfig struct {
	// Name identifies the webhook in the console and the logs (its URL,
	// which may hold a token, is never shown). Required, unique.
	Name string `json:"name"`
	// URL is where alerts are posted (http or https); it may use {env.*}
	// placeholders.
	URL string `json:"url"`
	// Secret signs each body (X-Air-Signature: t=<unix>,v1=<hex
	// HMAC-SHA256 of "<t>.<body>">); it may use {env.*} placeholders.
	// Empty: unsigned.
	Secret string `json:"secret,omitempty"`
	// Events, if set, are the kinds this webhook receives: budget,
	// breaker_open, breaker_closed, ledger_unavailable, ledger_available,
	// key_expiring. Default: all.
	Events []string `json:"events,omitempty"`
	// Format is json (default: the event as JSON) or slack (a Slack
	// incoming-webhook message).
	Format string `json:"format,omitempty"`
}

// processAlertMetrics returns the alerts' collectors of the process.
var processAlertMetrics = sync.OnceValue(airmetrics.NewAlerts)

// provisionAlerts builds the dispatcher of this config: its webhooks with
// their placeholders resolved. It starts nothing.
func (a *App) provisionAlerts(ctx caddy.Context) error {
	c := a.Alerts
	if c == nil {
		c = &AlertsConfig{}
		a.Alerts = c
	}
	if c.KeyExpiryLead == 0 {
		c.KeyExpiryLead = caddy.Duration(defaultKeyExpiryLead)
	}
	if c.CheckInterval == 0 {
		c.CheckInterval = caddy.Duration(defaultAlertCheckInterval)
	}
	repl := caddy.NewReplacer()
	cfg := alerts.Config{QueueSize: c.QueueSize, Logger: a.logger.Named("alerts")}
	for _, w := range c.Webhooks {
		// The errors name neither value: a URL may hold a token too.
		u, err := expand(repl, w.URL)
		if err != nil {
			return fmt.Errorf("alerts: webhook %s: url: a placeholder is unset or empty, or the url is empty", w.Name)
		}
		var secret string
		if w.Secret != "" {
			if secret, err = expand(repl, w.Secret); err != nil {
				return fmt.Errorf("alerts: webhook %s: secret: a placeholder is unset or empty", w.Name)
			}
		}
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return fmt.Errorf("alerts: webhook %s: url must be an absolute http or https URL", w.Name)
		}
		cfg.Webhooks = append(cfg.Webhooks, &alerts.Webhook{Name: w.Name, URL: u, Secret: secret, Events: w.Events, Format: w.Format})
	}
	if a.metrics != nil {
		m := processAlertMetrics()
		if err := m.Register(ctx.GetMetricsRegistry()); err != nil {
			return fmt.Errorf("alerts: metrics: %v", err)
		}
		cfg.Observer = m
	}
	a.alerts = alerts.NewDispatcher(cfg)
	return nil
}

// validate checks the alerts' settings, whatever config set them.
func (c *AlertsConfig) validate() error {
	if c == nil {
		return nil
	}
	if c.KeyExpiryLead < 0 || c.CheckInterval < 0 || c.QueueSize < 0 {
		return errors.New("alerts: key_expiry_lead, check_interval and queue_size must be positive")
	}
	names := map[string]bool{}
	for _, w := range c.Webhooks {
		switch {
		case w.Name == "":
			return errors.New("alerts: a webhook needs a name")
		case names[w.Name]:
			return fmt.Errorf("alerts: webhook %s is defined twice", w.Name)
		case w.URL == "":
			return fmt.Errorf("alerts: webhook %s needs a url", w.Name)
		case w.Format != "" && w.Format != alerts.FormatJSON && w.Format != alerts.FormatSlack:
			return fmt.Errorf("alerts: webhook %s: format %q is not json or slack", w.Name, w.Format)
		}
		names[w.Name] = true
		for _, k := range w.Events {
			if !alerts.KnownKind(k) {
				return fmt.Errorf("alerts: webhook %s: unknown event %q (known: %v)", w.Name, k, alerts.Kinds)
			}
		}
	}
	return nil
}
