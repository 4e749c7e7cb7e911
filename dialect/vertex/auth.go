package vertex

import (
	"context"
	"errors"
	"net/http"
	"time"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
)

// Scope is the OAuth2 scope Vertex AI requires.
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// Options tune how tokens are fetched. The zero value is the library's
// defaults.
type Options struct {
	// EarlyRefresh is how long before its expiry a token is refreshed
	// (default 3m45s): in the background, while requests still use the
	// current one; only an expired token makes a request wait.
	EarlyRefresh time.Duration
	// Client sends the token requests (default http.DefaultClient's
	// settings).
	Client *http.Client
}

// detect is the library's options for o.
func (o Options) detect() *credentials.DetectOptions {
	return &credentials.DetectOptions{
		Scopes:            []string{Scope},
		EarlyTokenRefresh: o.EarlyRefresh,
		Client:            o.Client,
	}
}

// Tokens issues the bearer tokens of one Google identity, cached and
// refreshed before they expire. It is safe for concurrent use.
type Tokens struct {
	creds *auth.Credentials
}

// FromServiceAccountJSON reads a service account key file's JSON: the
// tokens come from the JWT-bearer grant at its token_uri. Only service
// account keys are accepted: other credential types found in a
// configuration could make the gateway fetch files or run commands.
func FromServiceAccountJSON(json []byte, o Options) (*Tokens, error) {
	creds, err := credentials.NewCredentialsFromJSON(credentials.ServiceAccount, json, o.detect())
	if err != nil {
		return nil, errors.New("vertex: reading the service account key: " + err.Error())
	}
	return &Tokens{creds: creds}, nil
}

// FromDefault finds the application default credentials:
// GOOGLE_APPLICATION_CREDENTIALS, gcloud's well-known file, or the
// metadata server of a Google Cloud machine.
func FromDefault(o Options) (*Tokens, error) {
	creds, err := credentials.DetectDefault(o.detect())
	if err != nil {
		return nil, errors.New("vertex: finding application default credentials: " + err.Error())
	}
	return &Tokens{creds: creds}, nil
}

// ProjectID is the credentials' project (the service account's, or the
// machine's), empty if they name none.
func (t *Tokens) ProjectID(ctx context.Context) string {
	p, _ := t.creds.ProjectID(ctx)
	return p
}

// SetAuth sets req's Authorization to a current bearer token, fetching
// one if none is cached or the cached one is near its expiry. The
// request's context bounds the fetch.
func (t *Tokens) SetAuth(req *http.Request) error {
	tok, err := t.creds.Token(req.Context())
	if err != nil {
		return errors.New("vertex: fetching an access token: " + err.Error())
	}
	typ := tok.Type
	if typ == "" {
		typ = "Bearer"
	}
	req.Header.Set("Authorization", typ+" "+tok.Value)
	return nil
}
