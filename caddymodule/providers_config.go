package caddymodule

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/routing"
)

// ProviderConfig declares one upstream provider.
type ProviderConfig struct {
	// Name identifies the provider in model lines and the ledger.
	Name string `json:"name"`
	// DialectRaw is the provider's protocol and the protocol's own
	// settings: a module of namespace air.dialects, named by its
	// "protocol" key, as reverse_proxy's transport is named by its
	// "protocol": {"protocol": "openai"}, "anthropic", "dashscope",
	// "cohere", "gemini" (Google AI Studio); {"protocol": "vertex",
	// "project", "region", "credentials_file", "token_url"} (Gemini on
	// Vertex AI); {"protocol": "bedrock", "region", "access_key_id",
	// "secret_access_key", "session_token"} (Amazon Bedrock's Converse
	// API); {"protocol": "azure", "api_version", "entra"} (Azure OpenAI).
	DialectRaw json.RawMessage `json:"dialect,omitempty" caddy:"namespace=air.dialects inline_key=protocol"`
	// BaseURLs are the provider's API base URLs, e.g.
	// "https://api.openai.com/v1". Placeholders like {env.X} are expanded.
	// Default, for gemini: https://generativelanguage.googleapis.com; for
	// vertex: its region's endpoint,
	// https://{region}-aiplatform.googleapis.com; for bedrock: its region's
	// runtime endpoint, https://bedrock-runtime.{region}.amazonaws.com (set
	// one only for a VPC endpoint or a proxy). An azure provider's are its
	// resource endpoints, such as https://my-resource.openai.azure.com.
	// Required for the other protocols.
	BaseURLs []string `json:"base_urls,omitempty"`
	// APIKeys are the provider's credentials, used in turn with BaseURLs.
	// Placeholders like {env.X} are expanded.
	APIKeys []string `json:"api_keys,omitempty"`
	// Timeout bounds a non-streaming request, the wait for response headers
	// and the silence between two stream events. Default: 10 minutes.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// TryTimeout bounds one attempt's wait for the response headers. An
	// attempt without them by then is abandoned (its connection closed),
	// counts as a timeout for the upstream's breaker, and the request
	// moves on to its next attempt (next deployment or upstream, with the
	// usual backoff), as after a refused connection; never after a byte
	// reached the client, and never for a task create (the provider may
	// have taken the job) nor a request pinned to the deployment holding
	// a stored response. It must be shorter than Timeout. A non-streaming
	// answer's headers come only once it is complete, so keep it above
	// the longest non-streaming answer the provider's models give. The
	// name follows reverse_proxy's lb_try_duration and lb_try_interval:
	// it bounds one try, and what follows it is the next try. Default: 0,
	// no bound (an attempt waits for Timeout, which ends the request).
	TryTimeout caddy.Duration `json:"try_timeout,omitempty"`
	// Retries is how many more attempts a request gets on the next base URL
	// or key after a connection error, 429 or 5xx before the first response
	// byte. Default: 2.
	Retries *int `json:"retries,omitempty"`
	// FailDuration is how long an upstream's open breaker keeps it out of
	// rotation before a probe. Default: 30s.
	FailDuration caddy.Duration `json:"fail_duration,omitempty"`
	// FailureRate is the share of failed attempts within FailWindow that
	// opens an upstream's breaker. Default: 0.5.
	FailureRate float64 `json:"failure_rate,omitempty"`
	// MinRequests is how many attempts within FailWindow an upstream must
	// have made before its failure rate is judged. Default: 5.
	MinRequests int `json:"min_requests,omitempty"`
	// FailWindow is the span of the failure rate. Default: 1m.
	FailWindow caddy.Duration `json:"fail_window,omitempty"`
	// Cooldown is how long an upstream that answered 429 without
	// Retry-After is out of rotation. Default: 5s.
	Cooldown caddy.Duration `json:"cooldown,omitempty"`
	// KeyCooldown is how long a key the provider rejected (401, 402,
	// quota spent; not 403, which refuses one request) is out of
	// rotation. Default: 10m.
	KeyCooldown caddy.Duration `json:"key_cooldown,omitempty"`
	// MaxConcurrent bounds the requests in flight per base URL × key.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	// RPM and TPM bound the requests and estimated tokens per minute per
	// base URL × key.
	RPM int `json:"rpm,omitempty"`
	TPM int `json:"tpm,omitempty"`
	// HealthCheck, when set, probes each base URL × key at an interval.
	HealthCheck *HealthCheckConfig `json:"health_check,omitempty"`

	// dialect is the loaded DialectRaw.
	dialect airmod.Dialect
}

// HealthCheckConfig is a provider's active health check.
type HealthCheckConfig struct {
	// Path is requested with GET below each base URL. Default: /models
	// (/v1beta/models for a gemini provider).
	Path string `json:"path,omitempty"`
	// Interval is the time between two checks. Default: 30s.
	Interval caddy.Duration `json:"interval,omitempty"`
	// Timeout bounds one check. Default: 5s.
	Timeout caddy.Duration `json:"timeout,omitempty"`
}

// DeploymentConfig is one deployment of a model (a `to` line).
type DeploymentConfig struct {
	// Provider names the provider.
	Provider string `json:"provider"`
	// UpstreamModel is the model name sent to it; empty keeps the
	// client's.
	UpstreamModel string `json:"upstream_model,omitempty"`
	// Weight is its share under weighted_random. Default: 1.
	Weight int `json:"weight,omitempty"`
	// Keys are the indexes (from 0) of the provider's api_key values it
	// may use. Default: all.
	Keys []int `json:"keys,omitempty"`
	// MaxConcurrent, RPM and TPM bound the deployment's requests in
	// flight, and requests and estimated tokens per minute.
	MaxConcurrent int `json:"max_concurrent,omitempty"`
	RPM           int `json:"rpm,omitempty"`
	TPM           int `json:"tpm,omitempty"`
}

// ModelConfig maps a model id or glob to its deployments.
type ModelConfig struct {
	// Pattern is a model id or a glob such as "qwen3-*".
	Pattern string `json:"pattern"`
	// Provider is the name of the provider serving the model, when it has
	// one deployment (the `model <id> <provider>` shorthand).
	Provider string `json:"provider,omitempty"`
	// Deployments serve the model (its `to` lines), in place of Provider
	// and UpstreamModel.
	Deployments []*DeploymentConfig `json:"deployments,omitempty"`
	// Fallbacks are model ids tried in order when no deployment answers
	// before the first byte.
	Fallbacks []string `json:"fallbacks,omitempty"`
	// LBPolicy picks a deployment: weighted_random (default), round_robin,
	// least_requests or lowest_latency.
	LBPolicy string `json:"lb_policy,omitempty"`
	// UpstreamModel, if set, is the model name sent upstream.
	UpstreamModel string `json:"upstream_model,omitempty"`
	// Kind is "chat", "messages", "image" or "video". Default: "chat" for
	// openai providers, "messages" for anthropic, "image" for dashscope.
	Kind string `json:"kind,omitempty"`
	// Sizes lists the allowed "<width>x<height>" sizes of a task model.
	Sizes []string `json:"sizes,omitempty"`
	// Formats lists the response formats (mp3, wav, …) a speech model
	// produces; empty allows any.
	Formats []string `json:"formats,omitempty"`
	// TypicalDuration is how long the model's videos usually take; it
	// drives the progress of tasks whose upstream reports none.
	TypicalDuration caddy.Duration `json:"typical_duration,omitempty"`
	// MaxOutputTokens is the most output a request to the model may
	// produce: budgets reserve the cost of this much output for a request
	// that sets no max_tokens (max_completion_tokens, max_output_tokens).
	// Default: providers.DefaultMaxOutputTokens for chat, messages and
	// responses (16,384).
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`
	// DropParams, for a chat or messages model reached from the other
	// protocol, drops the request parameters its provider cannot honour
	// (listed in the X-Air-Dropped-Params response header) instead of
	// refusing the request with a 400 that names the first.
	DropParams bool `json:"drop_params,omitempty"`
}

// buildRoutes turns the provider and model config into a routing table.
func (a *App) buildRoutes() (*providers.Table, error) {
	repl := caddy.NewReplacer()
	byName := make(map[string]*providers.Provider)
	provs := make([]*providers.Provider, 0, len(a.Providers))
	for _, pc := range a.Providers {
		p := &providers.Provider{
			Name:    pc.Name,
			Timeout: time.Duration(pc.Timeout),
			Retries: defaultRetries,
		}
		if p.Timeout == 0 {
			p.Timeout = defaultProviderTimeout
		}
		if pc.TryTimeout < 0 || (pc.TryTimeout > 0 && time.Duration(pc.TryTimeout) >= p.Timeout) {
			return nil, a.configError(fmt.Errorf("provider %s: try_timeout %s must be positive and shorter than timeout %s",
				pc.Name, time.Duration(pc.TryTimeout), p.Timeout))
		}
		if pc.Retries != nil {
			p.Retries = *pc.Retries
		}
		for _, u := range pc.BaseURLs {
			v, err := expand(repl, u)
			if err != nil {
				return nil, a.configError(fmt.Errorf("provider %s: base_url: %w", pc.Name, err))
			}
			p.BaseURLs = append(p.BaseURLs, v)
		}
		for _, k := range pc.APIKeys {
			v, err := expand(repl, k)
			if err != nil {
				return nil, a.configError(fmt.Errorf("provider %s: api_key: %w", pc.Name, err))
			}
			p.APIKeys = append(p.APIKeys, v)
		}
		if err := a.setupDialect(pc, p); err != nil {
			return nil, a.configError(fmt.Errorf("provider %s: %w", pc.Name, err))
		}
		byName[p.Name] = p
		provs = append(provs, p)
	}
	routes := make([]*providers.Route, 0, len(a.Models))
	for _, mc := range a.Models {
		rt := &providers.Route{
			Pattern:         mc.Pattern,
			UpstreamModel:   mc.UpstreamModel,
			Kind:            mc.Kind,
			Sizes:           mc.Sizes,
			Formats:         mc.Formats,
			TypicalDuration: time.Duration(mc.TypicalDuration),
			MaxOutputTokens: int64(mc.MaxOutputTokens),
			Fallbacks:       mc.Fallbacks,
			Policy:          mc.LBPolicy,
			DropParams:      mc.DropParams,
			MaxTokens:       int64(mc.MaxOutputTokens),
		}
		if mc.MaxOutputTokens < 0 {
			return nil, fmt.Errorf("model %q: negative max_output_tokens", mc.Pattern)
		}
		if mc.Provider != "" {
			p, ok := byName[mc.Provider]
			if !ok {
				return nil, fmt.Errorf("model %q: unknown provider %q", mc.Pattern, mc.Provider)
			}
			rt.Provider = p
		}
		for _, dc := range mc.Deployments {
			p, ok := byName[dc.Provider]
			if !ok {
				return nil, fmt.Errorf("model %q: unknown provider %q", mc.Pattern, dc.Provider)
			}
			rt.Deployments = append(rt.Deployments, &providers.Deployment{Provider: p, UpstreamModel: dc.UpstreamModel,
				Keys: dc.Keys, Weight: dc.Weight, MaxConcurrent: dc.MaxConcurrent, RPM: dc.RPM, TPM: dc.TPM})
		}
		routes = append(routes, rt)
	}
	return providers.NewTable(provs, routes)
}

// expand replaces the placeholders of a setting: see airmod.Expand.
func expand(repl *caddy.Replacer, s string) (string, error) {
	return airmod.Expand(repl, s)
}

// setupDialect loads pc's dialect module (namespace air.dialects, named
// by the dialect object's "protocol"), which checks the protocol's
// settings, and lets it check and complete p.
func (a *App) setupDialect(pc *ProviderConfig, p *providers.Provider) error {
	name := gjson.GetBytes(pc.DialectRaw, "protocol").String()
	if err := airmod.CheckKnown("protocol", airmod.DialectNamespace, name); err != nil {
		return err
	}
	mod, err := a.ctx.LoadModule(pc, "DialectRaw")
	if err != nil {
		return err
	}
	pc.dialect = mod.(airmod.Dialect)
	// LoadModule dropped the raw object; the config's snapshots (audit)
	// keep it as written.
	pc.DialectRaw = caddyconfig.JSONModuleObject(mod, "protocol", name, nil)
	p.Protocol = pc.dialect.Protocol()
	return pc.dialect.Setup(p, airmod.SetupOptions{HealthCheck: pc.HealthCheck != nil})
}

// routingOptions are the routing options of each provider.
func (a *App) routingOptions() map[string]routing.Options {
	out := make(map[string]routing.Options, len(a.Providers))
	for _, pc := range a.Providers {
		o := routing.Options{FailureRate: pc.FailureRate, MinRequests: int64(pc.MinRequests), FailWindow: time.Duration(pc.FailWindow),
			FailDuration: time.Duration(pc.FailDuration), Cooldown: time.Duration(pc.Cooldown), KeyCooldown: time.Duration(pc.KeyCooldown),
			MaxConcurrent: pc.MaxConcurrent, RPM: pc.RPM, TPM: pc.TPM, TryTimeout: time.Duration(pc.TryTimeout)}
		if hc := pc.HealthCheck; hc != nil {
			o.HealthCheck = &routing.HealthCheck{Path: hc.Path, Interval: time.Duration(hc.Interval), Timeout: time.Duration(hc.Timeout)}
			if hp, ok := pc.dialect.(airmod.HealthPather); ok && hc.Path == "" {
				o.HealthCheck.Path = hp.HealthPath()
			}
		}
		out[pc.Name] = o
	}
	return out
}
