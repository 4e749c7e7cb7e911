package caddymodule

import (
	"errors"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/mockprovider"
)

// MockBedrock is the fake Bedrock Runtime of an air_mock handler: it
// answers Converse and ConverseStream on …/model/{id}/converse(-stream)
// below the handler's path, in their real shapes (the stream in AWS's
// binary event stream framing), and verifies each request's SigV4
// signature with its own copy of the secret.
type MockBedrock struct {
	// Region is the region requests must be signed for.
	Region string `json:"region"`
	// AccessKeyID is the only access key it accepts. Placeholders like
	// {env.X} are expanded.
	AccessKeyID string `json:"access_key_id"`
	// SecretAccessKey is that key's secret, with which it recomputes the
	// signatures. Placeholders like {env.X} are expanded.
	SecretAccessKey string `json:"secret_access_key"`
	// RetryAfter, if set, is sent as Retry-After with a throttling 429
	// (Bedrock itself sends none; a proxy in front of it may).
	RetryAfter caddy.Duration `json:"retry_after,omitempty"`
}

// mockClouds is the mockprovider configuration of the bedrock and azure
// fakes of m.
func (m *Mock) mockClouds(c *mockprovider.Config) error {
	repl := caddy.NewReplacer()
	if b := m.Bedrock; b != nil {
		if b.Region == "" || b.AccessKeyID == "" || b.SecretAccessKey == "" {
			return errors.New("air_mock: bedrock needs region, access_key_id and secret_access_key")
		}
		if b.RetryAfter < 0 {
			return errors.New("air_mock: bedrock retry_after must not be negative")
		}
		c.Bedrock = &mockprovider.BedrockConfig{Region: b.Region, AccessKeyID: repl.ReplaceAll(b.AccessKeyID, ""),
			SecretAccessKey: repl.ReplaceAll(b.SecretAccessKey, ""), RetryAfter: time.Duration(b.RetryAfter)}
	}
	c.AzureKey = repl.ReplaceAll(m.AzureKey, "")
	return nil
}

// parseMockBedrock reads a bedrock block:
//
//	bedrock {
//		region <region>
//		access_key_id <id>
//		secret_access_key <secret>
//		retry_after <duration>
//	}
func parseMockBedrock(d *caddyfile.Dispenser) (*MockBedrock, error) {
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	b := &MockBedrock{}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		var err error
		switch d.Val() {
		case "region":
			if !d.AllArgs(&b.Region) {
				return nil, d.ArgErr()
			}
		case "access_key_id":
			if !d.AllArgs(&b.AccessKeyID) {
				return nil, d.ArgErr()
			}
		case "secret_access_key":
			if !d.AllArgs(&b.SecretAccessKey) {
				return nil, d.ArgErr()
			}
		case "retry_after":
			b.RetryAfter, err = parseDuration(d)
		default:
			return nil, d.Errf("unrecognized air_mock bedrock option %q", d.Val())
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}
