package integration

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/vertex"
	"github.com/caddy-air/caddy-air/internal/googletest"
)

// Google's fakes in the tests: their API key, project, region and
// service account.
const (
	geminiKey     = "AIza-test-gemini-key"
	vertexProject = "air-test-project"
	vertexRegion  = "europe-west4"
	vertexEmail   = "air-gateway@air-test-project.iam.gserviceaccount.com"
)

// googleFake is a fake Gemini API or Vertex AI (dialect/gemini's Server)
// behind a recorder of what it was sent and answered.
type googleFake struct {
	*httptest.Server
	mu        sync.Mutex
	exchanges []*googleExchange
}

// googleExchange is one request to a fake and its answer, complete once
// done is closed.
type googleExchange struct {
	body, path, auth, answer string
	done                     chan struct{}
}

// newGoogleFake serves srv, recording each exchange.
func newGoogleFake(t *testing.T, srv http.Handler) *googleFake {
	f := &googleFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		x := &googleExchange{body: string(body), path: r.URL.RequestURI(), auth: r.Header.Get("Authorization") + r.Header.Get("X-Goog-Api-Key"),
			done: make(chan struct{})}
		f.mu.Lock()
		f.exchanges = append(f.exchanges, x)
		f.mu.Unlock()
		rec := &teeWriter{ResponseWriter: w}
		defer func() {
			x.answer = rec.buf.String()
			close(x.done)
		}()
		srv.ServeHTTP(rec, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// last returns the last request's body, answer, path and credential,
// once the fake has answered it.
func (f *googleFake) last(t *testing.T) (body, answer, path, auth string) {
	t.Helper()
	f.mu.Lock()
	n := len(f.exchanges)
	f.mu.Unlock()
	if n == 0 {
		t.Fatal("the fake received no request")
	}
	x := f.exchanges[n-1]
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the fake's last answer is not complete")
	}
	return x.body, x.answer, x.path, x.auth
}

// count is the number of requests the fake received.
func (f *googleFake) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.exchanges)
}

// teeWriter keeps a copy of the answer it writes, flushing as it goes.
type teeWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *teeWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

// reportedUsage is the last usageMetadata of a Gemini answer or stream,
// as the provider reported it.
func reportedUsage(answer string) gjson.Result {
	var u gjson.Result
	for _, line := range bytes.Split([]byte(answer), []byte("\n")) {
		line = bytes.TrimPrefix(bytes.TrimSpace(line), []byte("data: "))
		if v := gjson.GetBytes(line, "usageMetadata"); v.Exists() {
			u = v
		}
	}
	return u
}

// serviceAccountFile writes a service account key file of k, whose token
// endpoint is tokenURL, and returns its path.
func serviceAccountFile(t *testing.T, k *rsa.PrivateKey, tokenURL string) string {
	return googletest.KeyFile(t, k, googletest.Account{Email: vertexEmail, Project: vertexProject, TokenURI: tokenURL})
}

var (
	rsaOnce sync.Once
	rsaKey  *rsa.PrivateKey
)

// serviceKey is the test service account's key, made once.
func serviceKey() *rsa.PrivateKey {
	rsaOnce.Do(func() {
		var err error
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return rsaKey
}

// googleCloud is a fake Gemini API and a fake Vertex AI with its token
// endpoint, whose tokens live for ttl.
type googleCloud struct {
	gemini, vertex *googleFake
	oauth          *vertex.OAuthServer
	tokenURL       string
	credentials    string
}

// newGoogleCloud starts the fakes.
func newGoogleCloud(t *testing.T, ttl time.Duration) *googleCloud {
	k := serviceKey()
	c := &googleCloud{oauth: &vertex.OAuthServer{ClientEmail: vertexEmail, PublicKey: &k.PublicKey, TTL: ttl}}
	ots := httptest.NewServer(c.oauth)
	t.Cleanup(ots.Close)
	c.tokenURL = ots.URL + "/token"
	c.credentials = serviceAccountFile(t, k, c.tokenURL)
	c.gemini = newGoogleFake(t, &gemini.Server{APIKey: geminiKey})
	c.vertex = newGoogleFake(t, vertex.NewServer(vertexProject, vertexRegion, c.oauth))
	return c
}

// providers are the Caddyfile provider blocks of the fakes: gem (AI
// Studio) and vtx (Vertex AI), without retries, with extra options.
func (c *googleCloud) providers(extra ...string) string {
	x := strings.Join(extra, "\n\t\t\t")
	return fmt.Sprintf(`provider gem {
			protocol gemini
			base_url %s
			api_key %s
			retries 0
			%s
		}
		provider vtx {
			protocol vertex
			base_url %s
			project %s
			region %s
			credentials_file %s
			retries 0
			%s
		}`, c.gemini.URL, geminiKey, x, c.vertex.URL, vertexProject, vertexRegion, c.credentials, x)
}

// googleModels are gem-flash (gemini-2.5-flash on AI Studio) and vtx-pro
// (gemini-2.5-pro on Vertex AI).
const googleModels = "model gem-flash gem gemini-2.5-flash\n\t\tmodel vtx-pro vtx gemini-2.5-pro"

// googlePrices prices them as Google does, cache reads at a share of the
// input price (0.075 and 0.125 per million tokens).
const googlePrices = `{"currency":"USD","models":{
	"gem-flash":{"tiers":[{"input":"0.30","output":"2.50"}],"cache":{"read":"0.25"}},
	"vtx-pro":{"tiers":[{"input":"1.25","output":"10"}],"cache":{"read":"0.1"}}}}`
