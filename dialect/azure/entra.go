package azure

import (
	"errors"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
)

// Scope is the OAuth2 scope of Azure OpenAI's data plane (Cognitive
// Services), for which Entra ID tokens are asked.
const Scope = "https://cognitiveservices.azure.com/.default"

// EntraOptions say how a provider gets Microsoft Entra ID tokens: with a
// client secret of an app registration (OAuth2 client credentials), or
// as the managed identity of the machine it runs on.
type EntraOptions struct {
	// TenantID, ClientID and ClientSecret are the app registration's
	// directory, application id and secret (client credentials).
	TenantID, ClientID, ClientSecret string
	// AuthorityHost replaces https://login.microsoftonline.com/ (a
	// sovereign cloud's, or a private authority's); it must use https.
	AuthorityHost string
	// ManagedIdentity takes the tokens of the machine's managed identity
	// instead (App Service, Functions, Container Apps, VMs through IMDS,
	// Azure Arc…): a user-assigned one when ClientID is set, else the
	// system-assigned one. TenantID and ClientSecret must be empty.
	ManagedIdentity bool
	// Transport, if set, sends the token requests (tests).
	Transport policy.Transporter
}

// Tokens are a provider's Entra ID access tokens, cached and refreshed
// before they expire by azidentity.
type Tokens struct {
	cred azcore.TokenCredential
}

// NewTokens checks o and makes its credential. No token is asked for
// until the first request.
func NewTokens(o EntraOptions) (*Tokens, error) {
	co := azcore.ClientOptions{Transport: o.Transport}
	if o.ManagedIdentity {
		if o.TenantID != "" || o.ClientSecret != "" {
			return nil, errors.New("azure: a managed identity takes no tenant_id or client_secret")
		}
		mo := &azidentity.ManagedIdentityCredentialOptions{ClientOptions: co}
		if o.ClientID != "" {
			mo.ID = azidentity.ClientID(o.ClientID)
		}
		cred, err := azidentity.NewManagedIdentityCredential(mo)
		if err != nil {
			return nil, errors.New("azure: managed identity: " + firstLine(err))
		}
		return &Tokens{cred: cred}, nil
	}
	if o.TenantID == "" || o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("azure: entra needs tenant_id, client_id and client_secret, or managed_identity")
	}
	so := &azidentity.ClientSecretCredentialOptions{ClientOptions: co}
	if o.AuthorityHost != "" {
		if !strings.HasPrefix(o.AuthorityHost, "https://") {
			return nil, errors.New("azure: authority_host must be an https URL")
		}
		so.Cloud = cloud.Configuration{ActiveDirectoryAuthorityHost: strings.TrimSuffix(o.AuthorityHost, "/") + "/"}
		// A private authority has no entry in Microsoft's instance
		// metadata, which is asked for by default.
		so.DisableInstanceDiscovery = true
	}
	cred, err := azidentity.NewClientSecretCredential(o.TenantID, o.ClientID, o.ClientSecret, so)
	if err != nil {
		return nil, errors.New("azure: " + firstLine(err))
	}
	return &Tokens{cred: cred}, nil
}

// SetAuth sets req's bearer token, asking Entra ID for one (bounded by
// req's context) unless a cached one is still valid, and removes any
// api-key. The error names the failure, never the secret.
func (t *Tokens) SetAuth(req *http.Request) error {
	tok, err := t.cred.GetToken(req.Context(), policy.TokenRequestOptions{Scopes: []string{Scope}})
	if err != nil {
		return errors.New("azure: getting an Entra ID token: " + firstLine(err))
	}
	delete(req.Header, APIKeyHeader)
	req.Header["Authorization"] = []string{"Bearer " + tok.Token}
	return nil
}

// firstLine is err's first non-empty line: azidentity's errors go on
// with troubleshooting text and the token endpoint's whole answer.
func firstLine(err error) string {
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "-") {
			return l
		}
	}
	return "failed"
}
