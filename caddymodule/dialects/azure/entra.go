package azure

import (
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/dialect/azure"
)

// Entra is how an azure provider gets Microsoft Entra ID tokens (scope
// https://cognitiveservices.azure.com/.default): an app registration's
// client secret, or the machine's managed identity.
type Entra struct {
	// TenantID is the app registration's directory (tenant) id.
	TenantID string `json:"tenant_id,omitempty"`
	// ClientID is the app registration's application (client) id, or,
	// with ManagedIdentity, a user-assigned identity's client id.
	ClientID string `json:"client_id,omitempty"`
	// ClientSecret is the app registration's secret; {env.*} is expanded.
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthorityHost replaces https://login.microsoftonline.com/ (a
	// sovereign cloud's authority); https only.
	AuthorityHost string `json:"authority_host,omitempty"`
	// ManagedIdentity takes the tokens of the managed identity of the
	// machine the gateway runs on (system-assigned, or the user-assigned
	// one ClientID names) instead of a client secret.
	ManagedIdentity bool `json:"managed_identity,omitempty"`
}

// tokens makes the Entra ID credential of e, its placeholders expanded.
func (e *Entra) tokens(repl *caddy.Replacer) (*azure.Tokens, error) {
	o := azure.EntraOptions{ManagedIdentity: e.ManagedIdentity, AuthorityHost: e.AuthorityHost}
	var err error
	for _, f := range []struct {
		name     string
		src, dst *string
	}{{"tenant_id", &e.TenantID, &o.TenantID}, {"client_id", &e.ClientID, &o.ClientID}, {"client_secret", &e.ClientSecret, &o.ClientSecret}} {
		if *f.dst, err = airmod.ExpandOptional(repl, *f.src); err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return azure.NewTokens(o)
}

// parseEntra reads an azure provider's entra block, d on its name:
//
//	entra {
//		tenant_id <id>
//		client_id <id>
//		client_secret <secret>
//		authority_host <url>
//		managed_identity
//	}
func parseEntra(d *caddyfile.Dispenser) (*Entra, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	e := &Entra{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		name := d.Val()
		if name == "managed_identity" {
			if d.NextArg() {
				return nil, d.ArgErr()
			}
			e.ManagedIdentity = true
			continue
		}
		var v string
		if !d.AllArgs(&v) {
			return nil, d.ArgErr()
		}
		switch name {
		case "tenant_id":
			e.TenantID = v
		case "client_id":
			e.ClientID = v
		case "client_secret":
			e.ClientSecret = v
		case "authority_host":
			e.AuthorityHost = v
		default:
			return nil, d.Errf("entra: unknown option %q", name)
		}
	}
	return e, nil
}
