package mockprovider

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/vertex"
)

// Defaults of the fake Vertex AI's location.
const (
	DefaultVertexProject = "mock-project"
	DefaultVertexRegion  = "us-central1"
)

// google is the mock's Google side: the fake Gemini API (dialect/gemini's
// Server, checking Config.APIKey in x-goog-api-key) and, with a service
// account, the fake Vertex AI and its OAuth2 token endpoint, which grants
// tokens for JWT assertions the account's key signed.
type google struct {
	gemini *gemini.Server
	vertex *gemini.Server
	oauth  *vertex.OAuthServer
	// project and region are the fake Vertex AI's location.
	project, region string
}

// serviceAccount reads a service account key file's email and public key.
func serviceAccount(key []byte) (string, *rsa.PublicKey, error) {
	var sa struct {
		ClientEmail string `json:"client_email"`
		PrivateKey  string `json:"private_key"`
	}
	if err := json.Unmarshal(key, &sa); err != nil {
		return "", nil, errors.New("vertex service account: " + err.Error())
	}
	block, _ := pem.Decode([]byte(sa.PrivateKey))
	if block == nil || sa.ClientEmail == "" {
		return "", nil, errors.New("vertex service account: no client_email or PEM private_key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		if k, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			return "", nil, errors.New("vertex service account: private_key: " + err.Error())
		}
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return "", nil, errors.New("vertex service account: private_key is not RSA")
	}
	return sa.ClientEmail, &rk.PublicKey, nil
}

// newGoogle makes the Google side of c.
func newGoogle(c *Config) (*google, error) {
	g := &google{gemini: &gemini.Server{APIKey: c.APIKey}, project: c.VertexProject, region: c.VertexRegion}
	if g.project == "" {
		g.project = DefaultVertexProject
	}
	if g.region == "" {
		g.region = DefaultVertexRegion
	}
	if c.APIKey == "" {
		g.gemini.Authorize = func(*http.Request) (int, string, string) { return 0, "", "" }
	}
	if len(c.VertexServiceAccount) == 0 {
		return g, nil
	}
	email, pub, err := serviceAccount(c.VertexServiceAccount)
	if err != nil {
		return nil, err
	}
	g.oauth = &vertex.OAuthServer{ClientEmail: email, PublicKey: pub}
	g.vertex = vertex.NewServer(g.project, g.region, g.oauth)
	return g, nil
}

// serve answers r if it is a Google request, and reports whether it was:
// below the mount, /v1beta/models/{m}:{method} is the Gemini API,
// /v1/projects/… Vertex AI and /token its token endpoint.
func (h *Handler) serveGoogle(w http.ResponseWriter, r *http.Request) bool {
	path := r.URL.Path
	if i := strings.LastIndex(path, "/v1beta/models/"); i >= 0 {
		h.google.gemini.ServeHTTP(w, r)
		return true
	}
	if h.google.vertex == nil {
		return false
	}
	if i := strings.LastIndex(path, "/v1/projects/"); i >= 0 {
		r2 := *r
		u := *r.URL
		u.Path, u.RawPath = path[i:], ""
		r2.URL = &u
		h.google.vertex.ServeHTTP(w, &r2)
		return true
	}
	if strings.HasSuffix(path, "/token") {
		// The assertion's audience is the URL the client posted to.
		if h.cfg.OriginalPath == nil {
			h.google.oauth.ServeHTTP(w, r)
			return true
		}
		if orig := h.cfg.OriginalPath(r); orig != "" && orig != path {
			r2 := *r
			u := *r.URL
			u.Path, u.RawPath = orig, ""
			r2.URL = &u
			r = &r2
		}
		h.google.oauth.ServeHTTP(w, r)
		return true
	}
	return false
}
