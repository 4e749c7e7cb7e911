package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/dialect/bedrock"
	"github.com/caddy-air/caddy-air/providers"
)

// BedrockConfig holds the AWS credentials of a bedrock provider. Without
// them (no bedrock block, or one with no keys) the provider takes its
// credentials from the AWS SDK's default chain: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the
// shared config and credentials files (AWS_PROFILE), web identity, SSO,
// and the ECS or EC2 instance role, refreshed before they expire.
type BedrockConfig struct {
	// AccessKeyID is the static access key id (AKIA… or, with
	// SessionToken, ASIA…). Placeholders like {env.X} are expanded.
	AccessKeyID string `json:"access_key_id,omitempty"`
	// SecretAccessKey is the access key's secret. Placeholders like
	// {env.X} are expanded. Required with AccessKeyID.
	SecretAccessKey string `json:"secret_access_key,omitempty"`
	// SessionToken is the session token of temporary keys, sent as
	// X-Amz-Security-Token. Placeholders like {env.X} are expanded.
	SessionToken string `json:"session_token,omitempty"`
}

// provisionBedrockAzure checks that the bedrock and azure options are
// set only on providers of those protocols, and provisions those
// providers.
func (a *App) provisionBedrockAzure(pc *ProviderConfig, p *providers.Provider, repl *caddy.Replacer) error {
	if pc.Bedrock != nil && pc.Protocol != providers.ProtocolBedrock {
		return fmt.Errorf("access_key_id, secret_access_key and session_token are bedrock settings, not %s ones", pc.Protocol)
	}
	if pc.Azure != nil && pc.Protocol != providers.ProtocolAzure {
		if pc.Azure.Entra != nil {
			return fmt.Errorf("entra is an azure setting, not a %s one", pc.Protocol)
		}
		return fmt.Errorf("api_version is an azure setting, not a %s one", pc.Protocol)
	}
	if pc.Project != "" || pc.CredentialsFile != "" || pc.TokenURL != "" {
		return errors.New("project, credentials_file and token_url are vertex settings")
	}
	switch pc.Protocol {
	case providers.ProtocolBedrock:
		return a.provisionBedrock(a.ctx, repl, pc, p)
	case providers.ProtocolAzure:
		if pc.Region != "" {
			return errors.New("region is not a setting of azure providers: the endpoint names the resource")
		}
		return a.provisionAzure(repl, pc, p)
	}
	return nil
}

// awsRegion is the shape of an AWS region name: us-east-1,
// eu-central-2, us-gov-west-1, cn-north-1, ap-southeast-5.
var awsRegion = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// provisionBedrock checks a bedrock provider's region and credentials,
// sets its base URL (the region's runtime endpoint unless base_url
// overrides it) and builds its SigV4 signer.
func (a *App) provisionBedrock(ctx context.Context, repl *caddy.Replacer, pc *ProviderConfig, p *providers.Provider) error {
	if pc.HealthCheck != nil {
		return errors.New("a bedrock provider has no health_check: Bedrock Runtime has no cheap request to probe, and its breakers judge it by its answers")
	}
	if len(p.APIKeys) > 0 {
		return errors.New("a bedrock provider signs with AWS credentials (access_key_id, secret_access_key, session_token or the default AWS chain), not api_key")
	}
	if pc.Region == "" {
		return errors.New("a bedrock provider needs its region, such as us-east-1")
	}
	region, err := expand(repl, pc.Region)
	if err != nil {
		return fmt.Errorf("region: %w", err)
	}
	if !awsRegion.MatchString(region) {
		return fmt.Errorf("region %q is not an AWS region name such as us-east-1", region)
	}
	if len(p.BaseURLs) == 0 {
		p.BaseURLs = []string{bedrock.BaseURL(region)}
	}
	creds, err := bedrockCredentials(ctx, repl, pc.Bedrock, region)
	if err != nil {
		return err
	}
	signer, err := bedrock.NewSigner(region, creds)
	if err != nil {
		return err
	}
	p.Endpoint = bedrockEndpoint{signer: signer}
	return nil
}

// bedrockEndpoint builds Bedrock Runtime's requests: the model in the
// URL, signed with SigV4 for each attempt (so a retry is signed anew).
type bedrockEndpoint struct {
	signer *bedrock.Signer
}

// NewRequest implements providers.Endpoint.
func (e bedrockEndpoint) NewRequest(ctx context.Context, a providers.Attempt, model string, stream bool, body []byte) (*http.Request, error) {
	ep := bedrock.Endpoint{BaseURL: a.BaseURL, Signer: e.signer}
	return ep.NewRequest(ctx, model, stream, body)
}

// Authorize implements providers.Endpoint: it signs req, whose body
// must be empty.
func (e bedrockEndpoint) Authorize(req *http.Request, _ providers.Attempt) error {
	return e.signer.Sign(req, nil)
}

// bedrockCredentials are the static keys of c, or the default AWS chain
// when c sets none.
func bedrockCredentials(ctx context.Context, repl *caddy.Replacer, c *BedrockConfig, region string) (aws.CredentialsProvider, error) {
	if c == nil || (c.AccessKeyID == "" && c.SecretAccessKey == "" && c.SessionToken == "") {
		creds, err := bedrock.DefaultCredentials(ctx, region)
		if err != nil {
			return nil, fmt.Errorf("the default AWS credential chain: %w", err)
		}
		return creds, nil
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return nil, errors.New("access_key_id and secret_access_key go together (leave all three keys out to use the default AWS chain)")
	}
	id, err := expand(repl, c.AccessKeyID)
	if err != nil {
		return nil, fmt.Errorf("access_key_id: %w", err)
	}
	secret, err := expand(repl, c.SecretAccessKey)
	if err != nil {
		return nil, fmt.Errorf("secret_access_key: %w", err)
	}
	var token string
	if c.SessionToken != "" {
		if token, err = expand(repl, c.SessionToken); err != nil {
			return nil, fmt.Errorf("session_token: %w", err)
		}
	}
	return bedrock.StaticCredentials(id, secret, token), nil
}

// parseBedrockAzureOption reads one of a provider block's bedrock
// (credentials) or azure (api_version) options, whose one argument may be
// a placeholder. Whether the provider's protocol takes it is checked at
// provisioning.
func parseBedrockAzureOption(d *caddyfile.Dispenser, p *ProviderConfig) error {
	name := d.Val()
	var v string
	if !d.AllArgs(&v) {
		return d.ArgErr()
	}
	if name == "api_version" {
		if p.Azure == nil {
			p.Azure = &AzureConfig{}
		}
		p.Azure.APIVersion = v
		return nil
	}
	if p.Bedrock == nil {
		p.Bedrock = &BedrockConfig{}
	}
	switch name {
	case "access_key_id":
		p.Bedrock.AccessKeyID = v
	case "secret_access_key":
		p.Bedrock.SecretAccessKey = v
	default:
		p.Bedrock.SessionToken = v
	}
	return nil
}

// Interface guards.
var (
	_ providers.Endpoint = bedrockEndpoint{}
	_ providers.Endpoint = azureEndpoint{}
)
