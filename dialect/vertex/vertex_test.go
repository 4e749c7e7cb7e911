package vertex

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/internal/googletest"
)

const (
	testProject = "air-test-project"
	testRegion  = "europe-west4"
	testEmail   = "gateway@air-test-project.iam.gserviceaccount.com"
	testModel   = "gemini-2.5-pro"
)

var (
	keysOnce   sync.Once
	key, other *rsa.PrivateKey
)

// keys makes the service account's key and a stranger's, once.
func keys(t *testing.T) (*rsa.PrivateKey, *rsa.PrivateKey) {
	keysOnce.Do(func() {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if other, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
	return key, other
}

// serviceAccountJSON is a key file of the test account signed by k,
// whose token_uri is tokenURL.
func serviceAccountJSON(t *testing.T, k *rsa.PrivateKey, tokenURL string) []byte {
	return googletest.KeyJSON(t, k, googletest.Account{Email: testEmail, Project: testProject, TokenURI: tokenURL})
}

// cloud starts a fake token endpoint and a fake Vertex.
func cloud(t *testing.T, ttl time.Duration) (*OAuthServer, *httptest.Server, *httptest.Server) {
	k, _ := keys(t)
	o := &OAuthServer{ClientEmail: testEmail, PublicKey: &k.PublicKey, TTL: ttl}
	ots := httptest.NewServer(o)
	t.Cleanup(ots.Close)
	vts := httptest.NewServer(NewServer(testProject, testRegion, o))
	t.Cleanup(vts.Close)
	return o, ots, vts
}

// ask sends a plain or streamed request with tok's bearer token and
// returns the answer's text (or the stream's raw body) and error.
func ask(t *testing.T, c *http.Client, url string, tok *Tokens, r *dialect.Request) (string, *dialect.Error) {
	t.Helper()
	body, err := Codec{}.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if tok != nil {
		if err := tok.SetAuth(req); err != nil {
			return "", &dialect.Error{Kind: dialect.ErrAuthentication, Message: err.Error()}
		}
	}
	return doAsk(t, c, req, r.Stream)
}

// doAsk sends req and reads the answer.
func doAsk(t *testing.T, c *http.Client, req *http.Request, stream bool) (string, *dialect.Error) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", Codec{}.DecodeError(resp.StatusCode, resp.Header, b)
	}
	if stream {
		return string(b), nil
	}
	out, err := Codec{}.DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	return out.Content[0].Text, nil
}

func hello() *dialect.Request {
	return &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "Hello"}}}}}
}

func TestServiceAccountTokenIsFetchedAndCached(t *testing.T) {
	o, ots, vts := cloud(t, time.Hour)
	tok, err := FromServiceAccountJSON(serviceAccountJSON(t, key, ots.URL+"/token"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p := tok.ProjectID(t.Context()); p != testProject {
		t.Errorf("project %q", p)
	}
	for i := range 5 {
		r := hello()
		r.Stream = i%2 == 1
		text, e := ask(t, vts.Client(), URL(vts.URL, testProject, testRegion, testModel, r.Stream), tok, r)
		if e != nil || !strings.Contains(text, "Mock reply to") && !strings.Contains(text, "Hello") {
			t.Fatalf("request %d: %q %v", i, text, e)
		}
	}
	if g := o.Grants.Load(); g != 1 {
		t.Errorf("%d tokens were granted for 5 requests within the token's life, want 1", g)
	}
}

func TestTokenIsRefreshedBeforeItExpires(t *testing.T) {
	// Tokens live 6 s and are refreshed in their last 4 s: the first is
	// reused at once; 2.5 s later a request starts a refresh, after which
	// requests get a new token while the first is still valid.
	o, ots, vts := cloud(t, 6*time.Second)
	tok, err := FromServiceAccountJSON(serviceAccountJSON(t, key, ots.URL+"/token"), Options{EarlyRefresh: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bearer := func() string {
		req, _ := http.NewRequest(http.MethodPost, "http://unused", nil)
		if err := tok.SetAuth(req); err != nil {
			t.Fatal(err)
		}
		return req.Header.Get("Authorization")
	}
	first := bearer()
	if again := bearer(); again != first || o.Grants.Load() != 1 {
		t.Fatalf("a fresh token was not reused: %d grants", o.Grants.Load())
	}
	time.Sleep(2500 * time.Millisecond)
	bearer() // starts the refresh in the background
	for i := 0; o.Grants.Load() < 2 && i < 100; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	next := bearer()
	if o.Grants.Load() != 2 || next == first {
		t.Fatalf("no refresh in the refresh window: %d grants", o.Grants.Load())
	}
	if !o.Valid(strings.TrimPrefix(first, "Bearer ")) {
		t.Errorf("the token was replaced only after it expired")
	}
	url := URL(vts.URL, testProject, testRegion, testModel, false)
	if _, e := ask(t, vts.Client(), url, tok, hello()); e != nil {
		t.Errorf("the refreshed token was refused: %v", e)
	}
}

func TestBadCredentialsAreRefused(t *testing.T) {
	_, stranger := keys(t)
	_, ots, vts := cloud(t, time.Hour)
	url := URL(vts.URL, testProject, testRegion, testModel, false)
	// A key the token endpoint does not know: no token, no request.
	tok, err := FromServiceAccountJSON(serviceAccountJSON(t, stranger, ots.URL+"/token"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, e := ask(t, vts.Client(), url, tok, hello()); e == nil || !strings.Contains(e.Message, "Invalid JWT Signature") {
		t.Errorf("a stranger's key got %+v", e)
	}
	// No token, or a made-up one: 401 UNAUTHENTICATED.
	for _, auth := range []string{"", "Bearer ya29.made-up"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := vts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if e := (Codec{}).DecodeError(resp.StatusCode, resp.Header, b); e.Status != 401 || e.Kind != dialect.ErrAuthentication {
			t.Errorf("authorization %q got %+v", auth, e)
		}
	}
	// A valid token for another project's path: 403.
	good, _ := FromServiceAccountJSON(serviceAccountJSON(t, key, ots.URL+"/token"), Options{})
	if _, e := ask(t, vts.Client(), URL(vts.URL, "someone-else", testRegion, testModel, false), good, hello()); e == nil || e.Status != 403 {
		t.Errorf("another project got %+v", e)
	}
	if _, err := FromServiceAccountJSON([]byte(`{"type":"authorized_user","client_id":"x","client_secret":"y","refresh_token":"z"}`), Options{}); err == nil {
		t.Error("a non-service-account credential was accepted")
	}
}

func TestApplicationDefaultCredentials(t *testing.T) {
	_, ots, vts := cloud(t, time.Hour)
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, serviceAccountJSON(t, key, ots.URL+"/token"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	tok, err := FromDefault(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if text, e := ask(t, vts.Client(), URL(vts.URL, testProject, testRegion, testModel, false), tok, hello()); e != nil || text != "Mock reply to: Hello" {
		t.Errorf("with ADC: %q %v", text, e)
	}
}

func TestURL(t *testing.T) {
	for i, tc := range []struct{ got, want string }{
		{URL(BaseURL("us-central1"), "p1", "us-central1", "gemini-2.5-flash", false),
			"https://us-central1-aiplatform.googleapis.com/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"},
		{URL(BaseURL("global"), "p1", "global", "gemini-3-pro-preview", true),
			"https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"},
		{URL("http://127.0.0.1:9/", "p", "r", "publishers/meta/models/llama", false),
			"http://127.0.0.1:9/v1/projects/p/locations/r/publishers/meta/models/llama:generateContent"},
	} {
		if tc.got != tc.want {
			t.Errorf("Test %d: %s, want %s", i, tc.got, tc.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	o, ots, vts := cloud(t, time.Hour)
	tok, err := FromServiceAccountJSON(serviceAccountJSON(t, key, ots.URL+"/token"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &Endpoint{BaseURL: vts.URL, Project: testProject, Region: testRegion, Tokens: tok}
	for _, stream := range []bool{false, true} {
		r := hello()
		r.Stream = stream
		body, _ := Codec{}.EncodeRequest(nil, r)
		req, err := e.NewRequest(t.Context(), testModel, stream, body)
		if err != nil {
			t.Fatal(err)
		}
		if text, ae := doAsk(t, vts.Client(), req, stream); ae != nil || !strings.Contains(text, "Hello") {
			t.Errorf("stream %v: %q %v", stream, text, ae)
		}
	}
	if o.Grants.Load() != 1 {
		t.Errorf("%d grants", o.Grants.Load())
	}
	if _, err := (&Endpoint{}).NewRequest(t.Context(), testModel, false, nil); err == nil {
		t.Error("an endpoint without credentials made a request")
	}
}
