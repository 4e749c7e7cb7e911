package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/dustin/go-humanize"

	"github.com/caddy-air/caddy-air/tasks"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("air", parseGlobalOption)
}

// parseGlobalOption turns the global `air { … }` block into the air app.
func parseGlobalOption(d *caddyfile.Dispenser, _ any) (any, error) {
	app := new(App)
	if err := app.UnmarshalCaddyfile(d); err != nil {
		return nil, err
	}
	return httpcaddyfile.App{Name: "air", Value: caddyconfig.JSON(app, nil)}, nil
}

// UnmarshalCaddyfile sets up the app from the global option block. Syntax:
//
//	air {
//		storage badger <dir> | postgres <dsn> {
//			intent_gather <duration>
//		}
//		prices <file.json>
//		ledger_retention <duration>
//		ledger_durability journaled|strict
//		ledger_commit_interval <duration>
//		max_request_body <size>
//		min_free_space <size>
//		max_json_depth <levels>
//		max_buffered_bodies <size>
//		provider <name> {
//			protocol openai|anthropic|dashscope|gemini|vertex|bedrock|azure|cohere
//			base_url <url> [<url>…]
//			api_key <key> [<key>…]
//			project <gcp-project>                 (vertex)
//			region <gcp-region>|<aws-region>      (vertex, bedrock)
//			credentials_file <service-account.json> (vertex)
//			token_url <url>                       (vertex)
//			access_key_id <id>                    (bedrock)
//			secret_access_key <secret>            (bedrock)
//			session_token <token>                 (bedrock)
//			endpoint <url> [<url>…]               (azure: base_url)
//			api_version <yyyy-mm-dd[-preview]>|v1 (azure)
//			entra {                               (azure, in place of api_key)
//				tenant_id <id>
//				client_id <id>
//				client_secret <secret>
//				authority_host <url>
//				managed_identity
//			}
//			timeout <duration>
//			try_timeout <duration>
//			retries <n>
//			fail_duration <duration>
//			failure_rate <0..1>
//			min_requests <n>
//			fail_window <duration>
//			cooldown <duration>
//			key_cooldown <duration>
//			max_concurrent <n>
//			rpm <n>
//			tpm <n>
//			health_check [<path>] [{
//				path <path>
//				interval <duration>
//				timeout <duration>
//			}]
//		}
//		model <id|glob> [<provider> [<upstream_model>]] [{
//			to <provider> [<upstream_model>] [weight <n>] [keys <i>…] [max_concurrent <n>] [rpm <n>] [tpm <n>]
//			fallback <model> [<model>…]
//			lb_policy weighted_random|round_robin|least_requests|lowest_latency
//			kind chat|messages|image|video|embedding|moderation|speech|transcription|rerank
//			sizes <width>x<height> [...]
//			formats <format> [...]
//			typical_duration <duration>
//			max_output_tokens <n>
//		}]
//		tasks {
//			ttl <duration>
//			media_ttl <duration>
//			poll_interval <duration>
//			max_concurrent_creates <n>
//			lease <duration>
//			media_fetch_allow <cidr|address|host:port>...
//		}
//		responses {
//			poll_interval <duration>
//			max_poll_interval <duration>
//			max_age <duration>
//			lease <duration>
//		}
//		health {
//			window <duration>
//			min_success_rate <0..1>
//			min_attempts <n>
//			max_ledger_lag <duration>
//		}
//		metrics off
//		metrics {
//			per_user
//		}
//		alerts {
//			webhook <name> <url> {
//				secret <secret>
//				events <kind>...
//				format json|slack
//			}
//			key_expiry_lead <duration>
//			check_interval <duration>
//			queue_size <n>
//		}
//	}
//
// `provider` and `model` repeat. Keys and URLs may use placeholders such as
// {env.OPENAI_API_KEY}. A model names its provider on its line (one
// deployment) or has `to` lines (one deployment each), not both.
func (a *App) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the option name
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "storage":
			a.Storage = &Storage{}
			var arg string
			if !d.Args(&a.Storage.Backend, &arg) || d.NextArg() {
				return d.ArgErr()
			}
			switch a.Storage.Backend {
			case backendBadger:
				a.Storage.Dir = arg
			case backendPostgres:
				a.Storage.DSN = arg
			default:
				return d.Errf("storage backend %q is not supported (badger or postgres)", a.Storage.Backend)
			}
			for nesting := d.Nesting(); d.NextBlock(nesting); {
				switch d.Val() {
				case "intent_gather":
					var s string
					if !d.AllArgs(&s) {
						return d.ArgErr()
					}
					g, perr := caddy.ParseDuration(s)
					if perr != nil {
						return d.Errf("intent_gather: bad duration %q", s)
					}
					a.Storage.IntentGather = (*caddy.Duration)(&g)
				default:
					return d.Errf("unknown storage setting %q", d.Val())
				}
			}
			if err := a.Storage.check(); err != nil {
				return d.Err(err.Error())
			}
		case "prices":
			if !d.AllArgs(&a.Prices) {
				return d.ArgErr()
			}
		case "ledger_retention":
			a.LedgerRetention, err = parseDuration(d)
		case "ledger_durability":
			if !d.AllArgs(&a.LedgerDurability) {
				return d.ArgErr()
			}
			if _, derr := a.durability(); derr != nil {
				return d.Err(derr.Error())
			}
		case "ledger_commit_interval":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			ci, perr := caddy.ParseDuration(s)
			if perr != nil || ci < 0 {
				return d.Errf("ledger_commit_interval: bad duration %q", s)
			}
			a.LedgerCommitInterval = (*caddy.Duration)(&ci)
		case "max_request_body":
			a.MaxRequestBody, err = parseSize(d)
		case "min_free_space":
			a.MinFreeSpace, err = parseSize(d)
		case "max_json_depth":
			a.MaxJSONDepth, err = parsePositiveInt(d)
		case "max_buffered_bodies":
			a.MaxBufferedBodies, err = parseSize(d)
		case "provider":
			err = a.parseProvider(d)
		case "model":
			err = a.parseModel(d)
		case "tasks":
			err = a.parseTasks(d)
		case "responses":
			err = a.parseResponses(d)
		case "batches":
			err = a.parseBatches(d)
		case "health":
			err = a.parseHealth(d)
		case "metrics":
			err = a.parseMetrics(d)
		case "alerts":
			err = a.parseAlerts(d)
		case "request_logs":
			err = a.parseRequestLogs(d)
		default:
			return d.Errf("unrecognized air option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parsePositiveInt reads the option's one argument, a positive integer.
func parsePositiveInt(d *caddyfile.Dispenser) (int, error) {
	name := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return 0, d.ArgErr()
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, d.Errf("%s: want a positive integer, got %q", name, s)
	}
	return n, nil
}

func (a *App) parseProvider(d *caddyfile.Dispenser) error {
	p := &ProviderConfig{}
	if !d.Args(&p.Name) {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "protocol":
			if !d.AllArgs(&p.Protocol) {
				return d.ArgErr()
			}
		case "base_url", "endpoint":
			p.BaseURLs = append(p.BaseURLs, d.RemainingArgs()...)
		case "access_key_id", "secret_access_key", "session_token", "api_version":
			err = parseBedrockAzureOption(d, p)
		case "entra":
			err = parseEntra(d, p)
		case "api_key":
			p.APIKeys = append(p.APIKeys, d.RemainingArgs()...)
		case "timeout":
			p.Timeout, err = parseDuration(d)
		case "try_timeout":
			p.TryTimeout, err = parseDuration(d)
		case "retries":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, perr := strconv.Atoi(s)
			if perr != nil || n < 0 {
				return d.Errf("retries: want a non-negative integer, got %q", s)
			}
			p.Retries = &n
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
			if perr != nil || f <= 0 || f > 1 {
				return d.Errf("failure_rate: want a number in (0, 1], got %q", v)
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
		case "project":
			if !d.AllArgs(&p.Project) {
				return d.ArgErr()
			}
		case "region":
			if !d.AllArgs(&p.Region) {
				return d.ArgErr()
			}
		case "credentials_file":
			if !d.AllArgs(&p.CredentialsFile) {
				return d.ArgErr()
			}
		case "token_url":
			if !d.AllArgs(&p.TokenURL) {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized provider option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if p.Protocol == "" {
		return d.Errf("provider %s: protocol is required", p.Name)
	}
	a.Providers = append(a.Providers, p)
	return nil
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
	if err := m.check(); err != nil {
		return d.Err(err.Error())
	}
	a.Models = append(a.Models, m)
	return nil
}

func (a *App) parseTasks(d *caddyfile.Dispenser) error {
	a.Tasks = &TasksConfig{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "ttl":
			a.Tasks.TTL, err = parseDuration(d)
		case "media_ttl":
			a.Tasks.MediaTTL, err = parseDuration(d)
		case "poll_interval":
			a.Tasks.PollInterval, err = parseDuration(d)
		case "max_concurrent_creates":
			a.Tasks.MaxConcurrentCreates, err = parsePositiveInt(d)
		case "lease":
			a.Tasks.Lease, err = parseDuration(d)
		case "media_fetch_allow":
			allow := d.RemainingArgs()
			if len(allow) == 0 {
				return d.ArgErr()
			}
			if err := tasks.CheckMediaFetchAllow(allow); err != nil {
				return d.Err(err.Error())
			}
			a.Tasks.MediaFetchAllow = append(a.Tasks.MediaFetchAllow, allow...)
		default:
			return d.Errf("unrecognized tasks option %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseSize reads one positive size argument, such as 16MiB.
func parseSize(d *caddyfile.Dispenser) (int64, error) {
	name := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return 0, d.ArgErr()
	}
	size, err := humanize.ParseBytes(s)
	if err != nil || size == 0 || size > 1<<62 {
		return 0, d.Errf("%s: bad size %q", name, s)
	}
	return int64(size), nil
}

// parseDuration reads one duration argument (Caddy syntax, so "90d" works).
func parseDuration(d *caddyfile.Dispenser) (caddy.Duration, error) {
	name := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return 0, d.ArgErr()
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: bad duration %q", name, s)
	}
	return caddy.Duration(dur), nil
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*App)(nil)
