// Package bedrock is the air.dialects.bedrock module: Amazon Bedrock
// Runtime's Converse API, the model in the URL, every request signed with
// SigV4 for the provider's region.
package bedrock

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/caddymodule/airmod"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
	"github.com/caddy-air/caddy-air/providers"
)

func init() {
	caddy.RegisterModule(Bedrock{})
}

// Bedrock is a bedrock provider's region and AWS credentials. Without
// keys the provider takes its credentials from the AWS SDK's default
// chain: the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN), the shared config and credentials files
// (AWS_PROFILE), web identity, SSO, and the ECS or EC2 instance role,
// refreshed before they expire.
type Bedrock struct {
	// Region is the provider's AWS region, such as us-east-1, which picks
	// its runtime endpoint and scopes its signatures. Required.
	// Placeholders are expanded.
	Region string `json:"region,omitempty"`
	// AccessKeyID is the static access key id (AKIA… or, with
	// SessionToken, ASIA…). Placeholders like {env.X} are expanded.
	AccessKeyID string `json:"access_key_id,omitempty"`
	// SecretAccessKey is the access key's secret. Placeholders like
	// {env.X} are expanded. Required with AccessKeyID.
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	// SessionToken is the session token of temporary keys, sent as
	// X-Amz-Security-Token. Placeholders like {env.X} are expanded.
	SessionToken string `json:"session_token,omitempty"`

	region string
	signer *bedrock.Signer
}

// CaddyModule returns the Caddy module information.
func (Bedrock) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  airmod.DialectNamespace + "." + providers.ProtocolBedrock,
		New: func() caddy.Module { return new(Bedrock) },
	}
}

// Protocol implements airmod.Dialect.
func (*Bedrock) Protocol() string { return providers.ProtocolBedrock }

// awsRegion is the shape of an AWS region name: us-east-1,
// eu-central-2, us-gov-west-1, cn-north-1, ap-southeast-5.
var awsRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// Provision checks the region and the credentials and builds the SigV4
// signer.
func (b *Bedrock) Provision(ctx caddy.Context) error {
	if b.Region == "" {
		return errors.New("a bedrock provider needs its region, such as us-east-1")
	}
	repl := caddy.NewReplacer()
	region, err := airmod.Expand(repl, b.Region)
	if err != nil {
		return fmt.Errorf("region: %w", err)
	}
	if !awsRegion.MatchString(region) {
		return fmt.Errorf("region %q is not an AWS region name such as us-east-1", region)
	}
	creds, err := b.credentials(ctx, repl, region)
	if err != nil {
		return err
	}
	if b.signer, err = bedrock.NewSigner(region, creds); err != nil {
		return err
	}
	b.region = region
	return nil
}

// credentials are the static keys, or the default AWS chain when none is
// set.
func (b *Bedrock) credentials(ctx context.Context, repl *caddy.Replacer, region string) (aws.CredentialsProvider, error) {
	if b.AccessKeyID == "" && b.SecretAccessKey == "" && b.SessionToken == "" {
		creds, err := bedrock.DefaultCredentials(ctx, region)
		if err != nil {
			return nil, fmt.Errorf("the default AWS credential chain: %w", err)
		}
		return creds, nil
	}
	if b.AccessKeyID == "" || b.SecretAccessKey == "" {
		return nil, errors.New("access_key_id and secret_access_key go together (leave all three keys out to use the default AWS chain)")
	}
	id, err := airmod.Expand(repl, b.AccessKeyID)
	if err != nil {
		return nil, fmt.Errorf("access_key_id: %w", err)
	}
	secret, err := airmod.Expand(repl, b.SecretAccessKey)
	if err != nil {
		return nil, fmt.Errorf("secret_access_key: %w", err)
	}
	var token string
	if b.SessionToken != "" {
		if token, err = airmod.Expand(repl, b.SessionToken); err != nil {
			return nil, fmt.Errorf("session_token: %w", err)
		}
	}
	return bedrock.StaticCredentials(id, secret, token), nil
}

// Setup implements airmod.Dialect: no health check and no api_key; the
// base URL defaults to the region's runtime endpoint.
func (b *Bedrock) Setup(p *providers.Provider, o airmod.SetupOptions) error {
	if o.HealthCheck {
		return errors.New("a bedrock provider has no health_check: Bedrock Runtime has no cheap request to probe, and its breakers judge it by its answers")
	}
	if len(p.APIKeys) > 0 {
		return errors.New("a bedrock provider signs with AWS credentials (access_key_id, secret_access_key, session_token or the default AWS chain), not api_key")
	}
	if len(p.BaseURLs) == 0 {
		p.BaseURLs = []string{bedrock.BaseURL(b.region)}
	}
	p.Endpoint = endpoint{signer: b.signer}
	return nil
}

// UnmarshalCaddyfile reads the bedrock settings of a provider block:
//
//	region <aws-region>
//	access_key_id <id>
//	secret_access_key <secret>
//	session_token <token>
func (b *Bedrock) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return airmod.ParseSettings(d, providers.ProtocolBedrock, func(name, val string) bool {
		switch name {
		case "region":
			b.Region = val
		case "access_key_id":
			b.AccessKeyID = val
		case "secret_access_key":
			b.SecretAccessKey = val
		case "session_token":
			b.SessionToken = val
		default:
			return false
		}
		return true
	})
}

// endpoint builds Bedrock Runtime's requests: the model in the URL,
// signed with SigV4 for each attempt (so a retry is signed anew).
type endpoint struct {
	signer *bedrock.Signer
}

// NewRequest implements providers.Endpoint.
func (e endpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := bedrock.Endpoint{BaseURL: a.BaseURL, Signer: e.signer}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint: it signs req, whose body must
// be empty.
func (e endpoint) Authorize(req *http.Request, _ providers.Attempt) error {
	return e.signer.Sign(req, nil)
}

// Interface guards.
var (
	_ airmod.Dialect        = (*Bedrock)(nil)
	_ caddy.Provisioner     = (*Bedrock)(nil)
	_ caddyfile.Unmarshaler = (*Bedrock)(nil)
	_ providers.Endpoint    = endpoint{}
)
