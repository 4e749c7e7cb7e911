// Package airmod declares what the air app asks of its plug-in modules:
// storage backends (namespace air.storage, selected by the storage
// object's "backend") and provider dialects (namespace air.dialects,
// selected by a provider's dialect object's "protocol"), as reverse_proxy
// asks its transports (http.reverse_proxy.transport, by "protocol").
//
// The modules live in sub-packages of caddymodule that import this
// package, never caddymodule itself, and the repository's root package
// imports them all (imports.go): a Caddy built with a narrower import
// leaves out the backends and protocols it does not need.
package airmod

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
)

// Namespaces of the air app's modules.
const (
	// StorageNamespace holds the storage backends, air.storage.<backend>.
	StorageNamespace = "air.storage"
	// DialectNamespace holds the provider protocols, air.dialects.<protocol>.
	DialectNamespace = "air.dialects"
)

// Storage is a storage backend. Its Provision expands its placeholders
// and fills its defaults, its Validate checks its settings; the app opens
// it in Start, once per PoolKey across config reloads.
type Storage interface {
	// PoolKey identifies the open backend across configs: two configs
	// with the same key share one open backend. It holds no secret.
	PoolKey() string
	// Open opens the backend's repositories, migrating them if needed.
	Open(ctx context.Context, o OpenOptions) (store.Repos, error)
	// Shared reports a backend that several gateway instances share, so
	// that budgets are leased, and teams reloaded, across instances.
	Shared() bool
	// Directory is the directory whose free space the storage guard watches,
	// or "" for a backend with no local directory.
	Directory() string
}

// OpenOptions are what Storage.Open takes from the app's settings.
type OpenOptions struct {
	// LedgerRetention is how long ledger records are kept.
	LedgerRetention time.Duration
	// Logger is the app's logger.
	Logger *zap.Logger
}

// IntentGatherer is a Storage whose ledger intents may be gathered into
// shared commits (postgres): Gather is the delay between two commits'
// starts for the ledger's durability, strict or not.
type IntentGatherer interface {
	Gather(strict bool) time.Duration
}

// Dialect is a provider protocol: the module owns the protocol's provider
// settings (a bedrock provider's region and keys, a vertex provider's
// project and credentials, an azure provider's api-version), checks them
// in its Provision and Validate, and builds the provider's endpoint.
type Dialect interface {
	// Protocol is the protocol's name, one of the providers.Protocol*
	// constants.
	Protocol() string
	// Setup checks p, a provider of this protocol with its placeholders
	// expanded, fills its defaults (the base URL of a cloud), and sets
	// p.Endpoint for a protocol that builds its own requests. Its errors
	// do not name the provider: the app does.
	Setup(p *providers.Provider, o SetupOptions) error
}

// SetupOptions are the provider's settings outside its dialect that a
// dialect checks.
type SetupOptions struct {
	// HealthCheck is set when the provider has an active health check.
	HealthCheck bool
}

// HealthPather is a Dialect whose providers' health checks default to a
// path of their own (the protocol's model list), once Setup has run.
type HealthPather interface {
	HealthPath() string
}

// Known lists the names of the modules registered in namespace, sorted,
// for the message that refuses an unknown one.
func Known(namespace string) []string {
	var names []string
	for _, info := range caddy.GetModules(namespace) {
		names = append(names, info.ID.Name())
	}
	slices.Sort(names)
	return names
}

// CheckKnown refuses name unless a module of namespace has it: what names
// the setting (such as "storage backend") leads the message, which lists
// the names this build knows.
func CheckKnown(what, namespace, name string) error {
	if _, err := caddy.GetModule(namespace + "." + name); err == nil && name != "" {
		return nil
	}
	known := Known(namespace)
	if name == "" {
		return fmt.Errorf("%s is required (this build knows %s)", what, strings.Join(known, ", "))
	}
	if len(known) == 0 {
		return fmt.Errorf("%s %q is not supported: this build has no %s modules", what, name, namespace)
	}
	return fmt.Errorf("%s %q is not supported (this build knows %s)", what, name, strings.Join(known, ", "))
}

// Expand replaces the placeholders of a setting. A setting that names an
// environment variable that is unset or empty, or that ends up empty, is
// an error: a provider without its key or URL, or a database without its
// address, would otherwise be called without them, and only the callers
// would see.
func Expand(repl *caddy.Replacer, s string) (string, error) {
	out, err := repl.ReplaceFunc(s, func(variable string, val any) (any, error) {
		name, ok := strings.CutPrefix(variable, "env.")
		if !ok {
			return val, nil
		}
		if v, set := os.LookupEnv(name); !set || v == "" {
			return nil, fmt.Errorf("environment variable %s is unset or empty", name)
		}
		return val, nil
	})
	if err != nil {
		return "", err
	}
	if out == "" {
		return "", fmt.Errorf("%q is empty once its placeholders are replaced", s)
	}
	return out, nil
}

// ExpandOptional is Expand for a setting that may be empty.
func ExpandOptional(repl *caddy.Replacer, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return Expand(repl, s)
}

// ParseSettings reads the settings of a dialect from d, which holds the
// options of a provider block that the app did not read itself, each
// with its one argument: set receives each option's name and argument,
// and reports whether the dialect has that setting.
func ParseSettings(d *caddyfile.Dispenser, protocol string, set func(name, value string) bool) error {
	for d.Next() {
		name := d.Val()
		var v string
		if !d.AllArgs(&v) {
			return d.ArgErr()
		}
		if !set(name, v) {
			return NotASetting(d, name, protocol)
		}
	}
	return nil
}

// NotASetting is the error of a provider option that neither the app nor
// the provider's dialect reads.
func NotASetting(d *caddyfile.Dispenser, name, protocol string) error {
	return d.Errf("%s is not a setting of %s providers", name, protocol)
}
