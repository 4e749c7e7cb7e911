package caddymodule

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/dustin/go-humanize"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
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
			err = a.parseStorage(d)
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
		case "ledger_commit_interval":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			ci, perr := caddy.ParseDuration(s)
			if perr != nil {
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

// parseStorage reads the storage line: the backend's name, then what its
// module (namespace air.storage) parses.
func (a *App) parseStorage(d *caddyfile.Dispenser) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	name := d.Val()
	if err := airmod.CheckKnown("storage backend", airmod.StorageNamespace, name); err != nil {
		return d.Err(err.Error())
	}
	mod, err := caddyfile.UnmarshalModule(d, airmod.StorageNamespace+"."+name)
	if err != nil {
		return err
	}
	a.StorageRaw = caddyconfig.JSONModuleObject(mod, "backend", name, nil)
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

// parseInt reads the option's one argument, an integer.
func parseInt(d *caddyfile.Dispenser) (int, error) {
	name := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return 0, d.ArgErr()
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, d.Errf("%s: want an integer, got %q", name, s)
	}
	return n, nil
}
