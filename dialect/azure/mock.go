package azure

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
)

// Front is a fake Azure OpenAI resource in front of a fake OpenAI (such
// as the mock provider): it checks the api-key header (and, on the
// deployment path, the api-version query parameter) and passes the
// request on with its path rewritten to OpenAI's /v1/…, as the resource
// passes it to the deployment's model. The Azure-Deployment header tells
// next which deployment the path named.
type Front struct {
	// Key is the resource key requests must carry.
	Key string
	// Bearer, if set, accepts an Entra ID token (Authorization: Bearer)
	// in place of the key when it reports the token valid.
	Bearer func(token string) bool
	// Next is the fake OpenAI.
	Next http.Handler
}

// ServeHTTP checks and forwards a request.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && f.Bearer != nil {
		if !f.Bearer(tok) {
			writeError(w, http.StatusUnauthorized, "401", "Unauthorized. Access token is missing, invalid, audience is incorrect (https://cognitiveservices.azure.com), or have expired.")
			return
		}
	} else if key := r.Header.Get(APIKeyHeader); key == "" || f.Key == "" || subtle.ConstantTimeCompare([]byte(key), []byte(f.Key)) != 1 {
		writeError(w, http.StatusUnauthorized, "401", "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.")
		return
	}
	r2 := r.Clone(r.Context())
	switch rest, ok := strings.CutPrefix(r.URL.Path, "/openai/deployments/"); {
	case ok:
		dep, op, _ := strings.Cut(rest, "/")
		v := r.URL.Query().Get("api-version")
		if v == "" {
			writeError(w, http.StatusNotFound, "404", "Resource not found")
			return
		}
		if CheckAPIVersion(v) != nil {
			writeError(w, http.StatusBadRequest, "BadRequest", "API version not supported")
			return
		}
		r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery = "/v1/"+op, "", ""
		r2.Header.Set("Azure-Deployment", dep)
	case strings.HasPrefix(r.URL.Path, "/openai/v1/"):
		r2.URL.Path, r2.URL.RawPath = strings.TrimPrefix(r.URL.Path, "/openai"), ""
	default:
		writeError(w, http.StatusNotFound, "404", "Resource not found")
		return
	}
	r2.Header.Del(APIKeyHeader)
	r2.Header.Del("Authorization")
	r2.RequestURI = ""
	f.Next.ServeHTTP(w, r2)
}

// writeError writes Azure's error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}
