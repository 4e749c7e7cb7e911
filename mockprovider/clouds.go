package mockprovider

import (
	"net/http"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/dialect/azure"
	"github.com/caddy-air/caddy-air/dialect/bedrock"
)

// BedrockConfig configures the fake Bedrock Runtime the mock mounts.
type BedrockConfig struct {
	// Region is the region requests must be signed for.
	Region string
	// AccessKeyID and SecretAccessKey are the only credentials it
	// accepts: it recomputes each request's SigV4 signature with them.
	AccessKeyID, SecretAccessKey string
	// RetryAfter, if set, is sent as Retry-After with a throttling 429.
	RetryAfter time.Duration
}

// clouds are the fakes of the cloud providers the mock mounts beside its
// OpenAI and Anthropic endpoints.
type clouds struct {
	bedrock *bedrock.Server
	azure   *azure.Front
}

// newClouds builds the fakes c asks for; next answers what the Azure
// front passes on.
func newClouds(c Config, next http.Handler) clouds {
	var out clouds
	if b := c.Bedrock; b != nil {
		out.bedrock = &bedrock.Server{Region: b.Region, AccessKeyID: b.AccessKeyID, SecretKey: b.SecretAccessKey, RetryAfter: b.RetryAfter}
	}
	if c.AzureKey != "" {
		// The front passes a request on without the api-key: the mock's
		// own key stands in for the deployment's.
		out.azure = &azure.Front{Key: c.AzureKey, Next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.APIKey != "" {
				r.Header["Authorization"] = []string{"Bearer " + c.APIKey}
			}
			next.ServeHTTP(w, r)
		})}
	}
	return out
}

// serveCloud answers r if its path is a mounted fake's: the Converse
// paths …/model/{id}/converse(-stream) of the fake Bedrock, and the
// deployment and v1 paths …/openai/deployments/… and …/openai/v1/… of the
// fake Azure OpenAI. It reports whether it did.
func (h *Handler) serveCloud(w http.ResponseWriter, r *http.Request) bool {
	if h.clouds.bedrock != nil {
		if _, _, ok := bedrock.ModelFromPath(r.URL.EscapedPath()); ok {
			h.clouds.bedrock.ServeHTTP(w, h.unstripped(r))
			return true
		}
	}
	if h.clouds.azure != nil {
		if i := strings.Index(r.URL.Path, "/openai/"); i >= 0 {
			rest := r.URL.Path[i:]
			if strings.HasPrefix(rest, "/openai/deployments/") || strings.HasPrefix(rest, "/openai/v1/") {
				r2 := r.Clone(r.Context())
				r2.URL.Path, r2.URL.RawPath = rest, ""
				h.clouds.azure.ServeHTTP(w, r2)
				return true
			}
		}
	}
	return false
}

// unstripped is r with the path the client sent, before a proxy (Caddy's
// handle_path) stripped a prefix from it: the path the client signed.
func (h *Handler) unstripped(r *http.Request) *http.Request {
	if h.cfg.OriginalPath == nil {
		return r
	}
	orig := h.cfg.OriginalPath(r)
	prefix, ok := strings.CutSuffix(orig, r.URL.Path)
	if !ok || prefix == "" {
		return r
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = prefix + r.URL.Path
	r2.URL.RawPath = prefix + r.URL.EscapedPath()
	return r2
}
