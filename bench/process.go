package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// caddyProcess is one Caddy started by the harness.
type caddyProcess struct {
	// Name labels the process in output ("bare" or "air").
	Name string
	// Port is the HTTP port of the site, on 127.0.0.1.
	Port int
	// AdminPort is the port of the admin API, on 127.0.0.1.
	AdminPort int

	bin     string
	config  string
	workDir string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePorts returns n TCP ports that were free on 127.0.0.1 a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		var err error
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	return ports, nil
}

// prepareProcess makes the working directory tmp/name and returns the Caddy
// process that runs there on port and admin, with the Caddyfile that config
// writes into that directory.
func prepareProcess(bin, tmp, name string, port, admin int, config func(dir string) (string, error)) (*caddyProcess, error) {
	dir := filepath.Join(tmp, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path, err := config(dir)
	if err != nil {
		return nil, err
	}
	return &caddyProcess{Name: name, Port: port, AdminPort: admin, bin: bin, config: path,
		workDir: dir, logPath: filepath.Join(dir, "caddy.log")}, nil
}

// PID returns the process id, or 0 when not running.
func (p *caddyProcess) PID() int {
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// URL returns the site URL of path.
func (p *caddyProcess) URL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.Port, path)
}

// AdminURL returns the admin API URL of path.
func (p *caddyProcess) AdminURL(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", p.AdminPort, path)
}

// Start runs `caddy run` on the process's config and waits until both the
// admin API and the site answer. Caddy's data and config directories are
// kept under workDir. It runs in its own process group, so that Ctrl-C
// reaches only the harness, which stops it; it dies with the harness
// (Pdeathsig).
func (p *caddyProcess) Start(ctx context.Context) error {
	if p.PID() != 0 {
		return fmt.Errorf("%s: already started", p.Name)
	}
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin, "run", "--config", p.config, "--adapter", "caddyfile")
	cmd.Dir = p.workDir
	cmd.Env = append(os.Environ(),
		"HOME="+p.workDir,
		"XDG_DATA_HOME="+filepath.Join(p.workDir, "data"),
		"XDG_CONFIG_HOME="+filepath.Join(p.workDir, "config"),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("%s: %v", p.Name, err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, 60*time.Second); err != nil {
		p.Stop()
		return fmt.Errorf("%s: %v\n%s", p.Name, err, p.logTail())
	}
	return nil
}

// waitReady polls the admin API and the site until both answer.
func (p *caddyProcess) waitReady(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	client := &http.Client{Timeout: 2 * time.Second}
	for _, u := range []string{p.AdminURL("/config/"), p.URL("/v1/models")} {
		for {
			resp, err := client.Get(u)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				break
			}
			select {
			case <-p.exited:
				return errors.New("caddy exited during startup")
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not answer within %v: %v", u, limit, err)
			}
		}
	}
	return nil
}

// Stop ends the process: SIGINT, then SIGKILL after 10 s. It is safe to
// call more than once.
func (p *caddyProcess) Stop() {
	if p.PID() == 0 {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
	}
	p.cmd = nil
}

// logTail returns the last few KiB of the process's log.
func (p *caddyProcess) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return ""
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

// createKey creates an API key through caddy-air's admin API and returns
// its secret.
func createKey(ctx context.Context, p *caddyProcess) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.AdminURL("/air/keys"),
		strings.NewReader(`{"user":"bench","name":"bench"}`))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("POST /air/keys: %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	var out struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Key == "" {
		return "", fmt.Errorf("POST /air/keys: no key in %s", body)
	}
	return out.Key, nil
}
