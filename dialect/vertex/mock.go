package vertex

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddy-air/caddy-air/dialect/gemini"
)

// jwtBearer is the grant type of a service account's token request.
const jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// maxSkew is how far a JWT's iat may be from the fake's clock.
const maxSkew = 5 * time.Minute

// OAuthServer is a fake Google OAuth2 token endpoint for tests and the
// mock provider: it grants access tokens to one service account for a
// JWT-bearer assertion that the account's key signed (RS256, checked
// with its public key), addressed to the endpoint (aud is its URL) and
// asking for the cloud-platform scope.
type OAuthServer struct {
	// ClientEmail is the service account's email, the JWT's iss.
	ClientEmail string
	// PublicKey is the public half of the service account's key.
	PublicKey *rsa.PublicKey
	// TTL is the life of the tokens it grants (default one hour).
	TTL time.Duration

	// Grants counts the tokens granted.
	Grants atomic.Int64

	mu     sync.Mutex
	tokens map[string]time.Time // token → expiry
}

// Valid reports whether token is one the server granted and unexpired.
func (o *OAuthServer) Valid(token string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	exp, ok := o.tokens[token]
	return ok && time.Now().Before(exp)
}

// ServeHTTP answers a token request.
func (o *OAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST required")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "malformed form body")
		return
	}
	if r.PostForm.Get("grant_type") != jwtBearer {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	aud := "http://" + r.Host + r.URL.Path
	if r.TLS != nil {
		aud = "https://" + r.Host + r.URL.Path
	}
	if msg := o.verify(r.PostForm.Get("assertion"), aud); msg != "" {
		oauthError(w, http.StatusBadRequest, "invalid_grant", msg)
		return
	}
	ttl := o.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	var b [24]byte
	rand.Read(b[:])
	token := "ya29.fake-" + hex.EncodeToString(b[:])
	o.mu.Lock()
	if o.tokens == nil {
		o.tokens = map[string]time.Time{}
	}
	now := time.Now()
	for t, exp := range o.tokens {
		if now.After(exp) {
			delete(o.tokens, t)
		}
	}
	o.tokens[token] = now.Add(ttl)
	o.mu.Unlock()
	o.Grants.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "Bearer", "expires_in": int(ttl / time.Second)})
}

// verify checks a JWT-bearer assertion and says what is wrong with it.
func (o *OAuthServer) verify(assertion, aud string) string {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "Invalid JWT: not three segments"
	}
	var header struct{ Alg string }
	var claims struct {
		Iss, Scope, Aud string
		Iat, Exp        int64
	}
	if decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		return "Invalid JWT: malformed segments"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || header.Alg != "RS256" {
		return "Invalid JWT Signature."
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(o.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return "Invalid JWT Signature."
	}
	now := time.Now()
	switch {
	case claims.Iss != o.ClientEmail:
		return "Invalid JWT: iss is not the service account"
	case claims.Aud != aud:
		return "Invalid JWT: Failed audience check. The right audience is " + aud
	case !strings.Contains(" "+claims.Scope+" ", " "+Scope+" "):
		return "Invalid JWT: the cloud-platform scope is required"
	case time.Unix(claims.Iat, 0).After(now.Add(maxSkew)) || time.Unix(claims.Exp, 0).Before(now) || claims.Exp-claims.Iat > 3600:
		return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
	}
	return ""
}

// decodeSegment reads a base64url JSON segment of a JWT.
func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// oauthError writes an OAuth2 error.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// NewServer returns a fake Vertex AI that answers as gemini.Server does,
// for project and region, to requests that carry a bearer token tokens
// granted and that has not expired.
func NewServer(project, region string, tokens *OAuthServer) *gemini.Server {
	prefix := "/v1/projects/" + project + "/locations/" + region + "/publishers/google/models/"
	return &gemini.Server{Authorize: func(r *http.Request) (int, string, string) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !tokens.Valid(tok) {
			return http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."
		}
		if !strings.HasPrefix(r.URL.Path, prefix) {
			return http.StatusForbidden, "PERMISSION_DENIED", "Permission denied on resource project or location (or it may not exist): " + r.URL.Path
		}
		return 0, "", ""
	}}
}
