package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// Ports of gateway processes started by these tests; distinct from the
// in-process Caddy's.
const (
	procHTTPPort  = "18080"
	procAdminAddr = "localhost:12019"
)

// process is a caddy-air gateway running as its own OS process.
type process struct {
	t       *testing.T
	port    string // the site's port
	config  string
	dataDir string
	cmd     *exec.Cmd
	log     *lockedBuffer
	// exited is closed once the process has ended and been waited for.
	exited chan struct{}
}

// lockedBuffer collects a process's output; the test reads it while the
// process writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// quickstartConfig returns Caddyfile.example with the test's ports and data
// dir, written to a temporary file, plus extra text for the global air
// block. The data dir is written literally: `caddy reload` adapts the
// Caddyfile in the CLI's own environment.
func quickstartConfig(t *testing.T, dataDir, airExtra string) string {
	t.Helper()
	src, err := os.ReadFile("../Caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(src), "8080", procHTTPPort)
	cfg = strings.Replace(cfg, "admin localhost:2019", "admin "+procAdminAddr, 1)
	cfg = strings.Replace(cfg, "video_duration 10s", "video_duration 2s", 1)
	cfg = strings.Replace(cfg, "{$AIR_DATA_DIR:.data/air}", dataDir, 1)
	if airExtra != "" {
		cfg = strings.Replace(cfg, "\tair {\n", "\tair {\n"+airExtra+"\n", 1)
	}
	path := filepath.Join(t.TempDir(), "Caddyfile")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startProcess runs `caddy run` on config, from the repository root (so
// relative paths in the config resolve as in the README), and waits until
// it answers.
func startProcess(t *testing.T, config, dataDir string) *process {
	t.Helper()
	return startProcessReady(t, config, dataDir, "/v1/models", http.StatusUnauthorized)
}

// startProcessReady is startProcess for any config: it waits until GET
// path on the process's HTTP port answers status. It fails at once if the
// process exits before.
func startProcessReady(t *testing.T, config, dataDir, path string, status int) *process {
	t.Helper()
	return startProcessAt(t, procHTTPPort, config, dataDir, path, status)
}

// startProcessAt is startProcessReady for a config whose site listens on
// port, for tests that run more than one gateway process.
func startProcessAt(t *testing.T, port, config, dataDir, path string, status int) *process {
	t.Helper()
	p := &process{t: t, port: port, config: config, dataDir: dataDir, log: new(lockedBuffer), exited: make(chan struct{})}
	p.cmd = exec.Command(caddyBin, "run", "--config", config, "--adapter", "caddyfile")
	p.cmd.Dir = ".."
	p.cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dataDir, "xdg"))
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.kill)
	eventually(t, 30*time.Second, "the gateway process answers", func() bool {
		if !p.running() {
			t.Fatalf("the gateway process exited during startup:\n%s", p.log.String())
		}
		resp, err := http.Get(p.url(path))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == status
	})
	return p
}

func (p *process) url(path string) string { return "http://localhost:" + p.port + path }

// pid returns the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill ends the process abruptly (SIGKILL) if it still runs, and shows
// the end of its log if the test failed.
func (p *process) kill() {
	if !p.running() {
		return
	}
	p.sigkill()
	if p.t.Failed() {
		p.t.Logf("gateway log (tail):\n%s", p.logTail(16<<10))
	}
}

// sigkill ends the process with SIGKILL, quietly, and waits until it has
// gone.
func (p *process) sigkill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// logTail returns the last n bytes of the process's output.
func (p *process) logTail(n int) string {
	s := p.log.String()
	if len(s) > n {
		s = s[len(s)-n:]
	}
	return s
}

// stop ends the process gracefully.
func (p *process) stop() {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// caddyCLI runs the caddy binary with args and returns its stdout.
func caddyCLI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddyBin, args...)
	cmd.Dir = ".."
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("caddy %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	return last
}

func getStatus(t *testing.T, url, key string) (int, string) {
	t.Helper()
	status, _, body := callURL(t, http.MethodGet, url, key, "")
	return status, string(body)
}

// TestQuickstart follows the README: start the gateway from
// Caddyfile.example, create a key with the CLI, call the API with and
// without it, reload with the same and a changed config.
func TestQuickstart(t *testing.T) {
	dataDir := t.TempDir()
	cfg := quickstartConfig(t, dataDir, "")
	p := startProcess(t, cfg, dataDir)

	out := caddyCLI(t, "air", "key", "create", "--user", "alice", "--name", "quickstart", "--config", cfg)
	key := lastLine(out)
	if !strings.HasPrefix(key, "sk-air-") {
		t.Fatalf("key create: last line %q is not a key:\n%s", key, out)
	}
	if status, body := getStatus(t, p.url("/v1/models"), key); status != http.StatusOK || !strings.Contains(body, "mock-gpt") {
		t.Fatalf("with the key: %d %s", status, body)
	}
	if status, body := getStatus(t, p.url("/v1/models"), ""); status != http.StatusUnauthorized || !strings.Contains(body, `"invalid_api_key"`) {
		t.Fatalf("without a key: %d %s", status, body)
	}
	// The example's Gemini model, on the mock's Gemini API.
	if status, _, body := callURL(t, http.MethodPost, p.url("/v1/messages"), key,
		`{"model":"mock-gemini","max_tokens":64,"messages":[{"role":"user","content":"Hello Gemini"}]}`, "anthropic-version", "2023-06-01"); status != http.StatusOK ||
		gjson.GetBytes(body, "content.0.text").Str != "Mock reply to: Hello Gemini" {
		t.Fatalf("mock-gemini: %d %s", status, body)
	}

	checkAccessLog(t, p, key)

	// The example's Bedrock and Azure models, on the mock's fakes.
	if status, _, body := callURL(t, http.MethodPost, p.url("/v1/messages"), key,
		`{"model":"mock-bedrock","max_tokens":64,"messages":[{"role":"user","content":"Hello Bedrock"}]}`, "anthropic-version", "2023-06-01"); status != http.StatusOK ||
		gjson.GetBytes(body, "content.0.text").Str != "Mock reply to: Hello Bedrock" {
		t.Fatalf("mock-bedrock: %d %s", status, body)
	}
	if status, _, body := callURL(t, http.MethodPost, p.url("/v1/chat/completions"), key,
		`{"model":"mock-azure","messages":[{"role":"user","content":"Hello Azure"}]}`); status != http.StatusOK ||
		!strings.Contains(gjson.GetBytes(body, "choices.0.message.content").Str, "Hello Azure") {
		t.Fatalf("mock-azure: %d %s", status, body)
	}

	list := caddyCLI(t, "air", "key", "list", "--user", "alice", "--config", cfg)
	if !strings.Contains(list, "alice") || !strings.Contains(list, "quickstart") || strings.Contains(list, key) {
		t.Fatalf("key list:\n%s", list)
	}

	// Reload with the same config, then with a changed one.
	caddyCLI(t, "reload", "--config", cfg, "--adapter", "caddyfile", "--force")
	changed := quickstartConfig(t, dataDir, "\t\tmodel reloaded-model mock")
	caddyCLI(t, "reload", "--config", changed, "--adapter", "caddyfile")
	if status, body := getStatus(t, p.url("/v1/models"), key); status != http.StatusOK || !strings.Contains(body, "reloaded-model") {
		t.Fatalf("after reloads: %d %s", status, body)
	}
	if strings.Contains(p.log.String(), "Cannot acquire directory lock") {
		t.Fatalf("a reload fought over the Badger lock:\n%s", p.log.String())
	}

	// Keys survive a restart of the process.
	p.stop()
	p = startProcess(t, changed, p.dataDir)
	if status, body := getStatus(t, p.url("/v1/models"), key); status != http.StatusOK {
		t.Fatalf("after a restart: %d %s", status, body)
	}

	id := strings.Fields(strings.Split(caddyCLI(t, "air", "key", "list", "--config", changed), "\n")[1])[0]
	if got := caddyCLI(t, "air", "key", "revoke", id, "--config", changed); !strings.Contains(got, fmt.Sprintf("revoked %s", id)) {
		t.Fatalf("revoke: %s", got)
	}
	if status, _ := getStatus(t, p.url("/v1/models"), key); status != http.StatusUnauthorized {
		t.Fatalf("revoked key: %d", status)
	}
}

// checkAccessLog makes one chat request with key and checks that its entry
// in the access log (Caddyfile.example's `log`, JSON on stderr) says who
// called, which model and provider served it, the tokens, the cost and the
// outcome, and the id of its ledger record, and never the key itself.
func checkAccessLog(t *testing.T, p *process, key string) {
	t.Helper()
	status, _, body := callURL(t, http.MethodPost, p.url("/v1/chat/completions"), key,
		`{"model":"mock-gpt","messages":[{"role":"user","content":"log me"}]}`)
	if status != http.StatusOK {
		t.Fatalf("chat: status %d %s", status, body)
	}
	var entry map[string]any
	eventually(t, 10*time.Second, "the chat request's access log entry", func() bool {
		for _, line := range strings.Split(p.log.String(), "\n") {
			if !strings.Contains(line, `"uri":"/v1/chat/completions"`) {
				continue
			}
			entry = nil
			return json.Unmarshal([]byte(line), &entry) == nil
		}
		return false
	})
	for field, want := range map[string]any{
		"air_user":         "alice",
		"air_model":        "mock-gpt",
		"air_provider":     "mock",
		"air_usage_source": "reported",
		"air_outcome":      "ok",
		"status":           float64(http.StatusOK),
	} {
		if entry[field] != want {
			t.Errorf("access log %s = %v, want %v", field, entry[field], want)
		}
	}
	for _, field := range []string{"air_key_id", "air_cost", "air_prompt_tokens", "air_output_tokens"} {
		if entry[field] == nil || entry[field] == "" {
			t.Errorf("access log has no %s", field)
		}
	}
	if prompt, _ := entry["air_prompt_tokens"].(float64); prompt <= 0 {
		t.Errorf("access log air_prompt_tokens = %v, want > 0", entry["air_prompt_tokens"])
	}
	if strings.Contains(p.log.String(), key) {
		t.Error("the log contains the API key")
	}
	// The access log entry names the request's ledger record.
	id, _ := entry["air_request_id"].(string)
	found := false
	for _, rec := range procLedger(t, "alice") {
		found = found || rec.ID == id && rec.Model == "mock-gpt"
	}
	if !strings.HasPrefix(id, "req_") || !found {
		t.Errorf("access log air_request_id = %q, want the id of a ledger record of the request", id)
	}
}

// procLedger lists every ledger record of user through the admin API of
// the process that startProcess started, after the ledger has flushed.
func procLedger(t *testing.T, user string) []ledgerRecord {
	t.Helper()
	status, body := getStatus(t, "http://"+procAdminAddr+"/air/ledger?flush=1&limit=1000000&user="+url.QueryEscape(user), "")
	var recs []ledgerRecord
	if err := json.Unmarshal([]byte(body), &recs); status != http.StatusOK || err != nil {
		t.Fatalf("ledger of %s: %d %v %s", user, status, err, body)
	}
	return recs
}
