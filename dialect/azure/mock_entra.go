package azure

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// EntraServer is a fake Microsoft Entra ID for tests: the client
// credentials grant of one app registration (OpenID discovery at
// /{tenant}/v2.0/.well-known/openid-configuration, tokens at
// /{tenant}/oauth2/v2.0/token), and an App Service managed identity
// endpoint at /msi/token (point IDENTITY_ENDPOINT at it, with
// IDENTITY_HEADER set to Header). It grants tokens for Scope only, each
// valid for TTL, which Valid checks.
type EntraServer struct {
	// TenantID, ClientID and ClientSecret are the app registration's.
	TenantID, ClientID, ClientSecret string
	// Header is the managed identity endpoint's X-IDENTITY-HEADER.
	Header string
	// TTL is a token's lifetime (an hour if zero).
	TTL time.Duration

	// Granted counts the tokens granted.
	Granted atomic.Int64

	mu     sync.Mutex
	tokens map[string]time.Time // token → expiry
}

// ServeHTTP answers discovery, token and managed identity requests.
func (s *EntraServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tenant := "/" + s.TenantID + "/"
	switch {
	case r.URL.Path == "/msi/token":
		s.managedIdentity(w, r)
	case r.URL.Path == tenant+"v2.0/.well-known/openid-configuration":
		base := "https://" + r.Host + "/" + s.TenantID
		writeJSON(w, http.StatusOK, map[string]any{"token_endpoint": base + "/oauth2/v2.0/token",
			"authorization_endpoint": base + "/oauth2/v2.0/authorize", "issuer": base + "/v2.0"})
	case r.URL.Path == tenant+"oauth2/v2.0/token" && r.Method == http.MethodPost:
		s.clientCredentials(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "invalid_request", "error_description": "AADSTS90002: Tenant not found."})
	}
}

// clientCredentials answers a client credentials grant.
func (s *EntraServer) clientCredentials(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type", "error_description": "AADSTS70003: the grant type is not supported."})
		return
	}
	f := r.PostForm
	if f.Get("client_id") != s.ClientID || subtle.ConstantTimeCompare([]byte(f.Get("client_secret")), []byte(s.ClientSecret)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
		return
	}
	if !strings.Contains(" "+f.Get("scope")+" ", " "+Scope+" ") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_scope", "error_description": "AADSTS70011: The provided value for the input parameter 'scope' is not valid."})
		return
	}
	tok, ttl := s.grant()
	writeJSON(w, http.StatusOK, map[string]any{"token_type": "Bearer", "expires_in": int(ttl.Seconds()), "ext_expires_in": int(ttl.Seconds()), "access_token": tok})
}

// managedIdentity answers App Service's managed identity token request.
func (s *EntraServer) managedIdentity(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if s.Header == "" || subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Identity-Header")), []byte(s.Header)) != 1 {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized", "error_description": "missing or wrong X-IDENTITY-HEADER"})
		return
	}
	if q.Get("api-version") != "2019-08-01" || strings.TrimSuffix(q.Get("resource"), "/") != strings.TrimSuffix(Scope, "/.default") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request", "error_description": "api-version 2019-08-01 and the Cognitive Services resource are required"})
		return
	}
	tok, ttl := s.grant()
	writeJSON(w, http.StatusOK, map[string]string{"access_token": tok, "expires_on": strconv.FormatInt(time.Now().Add(ttl).Unix(), 10),
		"resource": q.Get("resource"), "token_type": "Bearer", "client_id": q.Get("client_id")})
}

// grant makes a token.
func (s *EntraServer) grant() (string, time.Duration) {
	ttl := s.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	b := make([]byte, 24)
	rand.Read(b)
	tok := "entra-" + hex.EncodeToString(b)
	s.mu.Lock()
	if s.tokens == nil {
		s.tokens = make(map[string]time.Time)
	}
	s.tokens[tok] = time.Now().Add(ttl)
	s.mu.Unlock()
	s.Granted.Add(1)
	return tok, ttl
}

// Valid reports whether tok is a token it granted that has not expired.
func (s *EntraServer) Valid(tok string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.tokens[tok]
	return ok && time.Now().Before(exp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
