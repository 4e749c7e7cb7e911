// Package integration runs caddy-air inside a real Caddy (caddytest) in
// the test process, over real HTTP on loopback, with the built-in mock
// provider and httptest servers as upstreams. caddytest uses fixed ports
// (admin localhost:2999, HTTP 9080), so this package runs with -p 1.
package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/caddyserver/caddy/v2/caddytest"

	_ "github.com/caddy-air/caddy-air"
	"github.com/caddy-air/caddy-air/internal/pgtest"
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

const (
	adminAddr = "localhost:2999"
	baseURL   = "http://localhost:9080"
)

// caddyBin is a caddy binary built from ./cmd/caddy, for the tests that
// drive the CLI or a separate gateway process.
var caddyBin string

// workDir holds the Badger directories of the in-process Caddy. They must
// outlive each test: the next test's config load closes the store, which
// writes to its directory, so t.TempDir (removed when a test ends) won't do.
var workDir string

// dataDir returns a fresh directory for a store that outlives the test.
func dataDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp(workDir, "data")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "caddy-air-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	caddyBin = filepath.Join(dir, "caddy")
	workDir = dir
	build := exec.Command("go", "build", "-o", caddyBin, "../cmd/caddy")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building caddy:", err)
		os.Exit(1)
	}
	stopPG := pgtest.Setup()
	code := m.Run()
	stopPG()
	printFaultTable(os.Stdout)
	os.RemoveAll(dir)
	os.Exit(code)
}

// gatewayOptions describes the config a test runs.
type gatewayOptions struct {
	// DataDir is the Badger directory; a fresh one when empty.
	DataDir string
	// Providers are extra provider blocks (Caddyfile text) beside the mock.
	Providers string
	// Models are extra model lines.
	Models string
	// Prices is the content of a price file; none when empty.
	Prices string
	// Extra is extra text for the air block (e.g. a tasks block).
	Extra string
	// MockOptions is the body of the air_mock block.
	MockOptions string
	// Site is extra text at the top of the site block (e.g. tracing, or a
	// handle block).
	Site string
	// Global is extra text for the global options block (e.g. a log).
	Global string
	// Storage, when set, replaces the storage line's arguments (e.g.
	// "postgres {env.X}"); DataDir then only holds the price file.
	Storage string
}

var configTemplate = template.Must(template.New("caddyfile").Parse(`{
	admin {{.Admin}}
	http_port 9080
	https_port 9443
	grace_period 5s
	{{.Global}}
	air {
		{{if .Storage}}storage {{.Storage}}{{else}}storage badger {{.DataDir}}{{end}}
		{{if .PricesFile}}prices {{.PricesFile}}{{end}}
		provider mock {
			protocol openai
			base_url http://localhost:9080/mock/v1
			api_key mock-upstream-key
			timeout 30s
		}
		provider mock-anthropic {
			protocol anthropic
			base_url http://localhost:9080/mock/v1
			api_key mock-upstream-key
		}
		{{.Providers}}
		model mock-gpt mock
		model mock-reasoner mock
		model mock-long mock
		model mock-embed mock {
			kind embedding
		}
		model mock-claude mock-anthropic
		model mock-image mock {
			kind image
			sizes 256x256 512x512 1024x1024
		}
		model gpt-image-1 mock {
			kind image
		}
		model mock-video mock {
			kind video
			typical_duration 2s
		}
		model omni-moderation-latest mock {
			kind moderation
		}
		model mock-tts mock {
			kind speech
			formats mp3 wav pcm
		}
		model mock-rerank mock {
			kind rerank
		}
		model whisper-1 mock {
			kind transcription
		}
		{{.Models}}
		{{.Extra}}
	}
}

http://localhost:9080 {
	{{.Site}}
	handle_path /mock/* {
		air_mock {
			api_key mock-upstream-key
			{{.MockOptions}}
		}
	}
	handle /media/* {
		air_media
	}
	handle /v1/* {
		air_auth
		route {
			air_chat /v1/chat/completions
			air_messages /v1/messages
			air_count_tokens /v1/messages/count_tokens
			air_embeddings /v1/embeddings
			air_moderations /v1/moderations
			air_speech /v1/audio/speech
			air_rerank /v1/rerank
			air_transcriptions /v1/audio/transcriptions
			air_translations /v1/audio/translations
			air_images /v1/images/generations
			air_responses /v1/responses*
			air_tasks /v1/tasks*
			air_batches /v1/files*
			air_batches /v1/batches*
			air_models /v1/models*
			air_not_found
		}
	}
	handle {
		air_not_found
	}
}
`))

// renderConfig returns the Caddyfile for o.
func renderConfig(t testing.TB, o gatewayOptions) string {
	t.Helper()
	data := struct {
		gatewayOptions
		Admin, PricesFile string
	}{gatewayOptions: o, Admin: adminAddr}
	if o.Prices != "" {
		data.PricesFile = filepath.Join(dataDir(t), "prices.json")
		if err := os.WriteFile(data.PricesFile, []byte(o.Prices), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var b strings.Builder
	if err := configTemplate.Execute(&b, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// gateway is a running caddy-air in the test process.
type gateway struct {
	t       testing.TB
	dataDir string
	opts    gatewayOptions
	tester  *caddytest.Tester
}

// startGateway loads a config with o into the in-process Caddy. Loading a
// config while another runs is a reload, exactly as `caddy reload` does.
func startGateway(t testing.TB, o gatewayOptions) *gateway {
	t.Helper()
	if o.DataDir == "" {
		o.DataDir = dataDir(t)
	}
	g := &gateway{t: t, dataDir: o.DataDir, opts: o, tester: caddytest.NewTester(t)}
	g.tester.InitServer(renderConfig(t, o), "caddyfile")
	if t.Failed() {
		t.FailNow()
	}
	forgetIdleConnections()
	return g
}

// forgetIdleConnections drops the shared client's kept-alive connections
// after a config load. The old server closes its idle connections as it
// stops; a request that picked one of them just before its FIN arrived would
// fail with EOF (a POST is not retried), which is what a real client sees on
// reload, but not what the test that follows is about.
func forgetIdleConnections() {
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
}

// reload loads a changed config into the running Caddy.
func (g *gateway) reload(o gatewayOptions) {
	g.t.Helper()
	if o.DataDir == "" {
		o.DataDir = g.dataDir
	}
	g.opts = o
	g.tester.InitServer(renderConfig(g.t, o), "caddyfile")
	if g.t.Failed() {
		g.t.FailNow()
	}
	forgetIdleConnections()
}

// createKey creates a key for user through the admin API.
func createKey(t testing.TB, user string) (secret, id string) {
	t.Helper()
	var out struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	status := adminJSON(t, http.MethodPost, "/air/keys", fmt.Sprintf(`{"user":%q,"name":"test"}`, user), &out)
	if status != http.StatusCreated || !strings.HasPrefix(out.Key, "sk-air-") {
		t.Fatalf("creating a key: status %d, %+v", status, out)
	}
	return out.Key, out.ID
}

// adminJSON calls the admin API and decodes its JSON answer into out.
func adminJSON(t testing.TB, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+adminAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("decoding %s %s: %v: %s", method, path, err, data)
		}
	}
	return resp.StatusCode
}

// call sends a request to the in-process gateway and returns status,
// headers and body.
func call(t testing.TB, method, path, key, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	return callURL(t, method, baseURL+path, key, body, header...)
}

// callURL sends a request to url with key, a JSON body if not empty, and
// header name/value pairs, and returns status, headers and body.
func callURL(t testing.TB, method, url, key, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

// apiError is the OpenAI error shape.
type apiError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// decodeError checks that body is an OpenAI-style error and returns it.
func decodeError(t testing.TB, body []byte) apiError {
	t.Helper()
	var e apiError
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI-style error: %s (%v)", body, err)
	}
	return e
}

// code returns the error's code, or "".
func (e apiError) code() string {
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

// eventually retries cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openStream posts a streaming chat request and returns the open response;
// the caller reads and closes it.
func openStream(t testing.TB, ctx context.Context, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
