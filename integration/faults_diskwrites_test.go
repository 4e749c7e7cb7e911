package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFaultDiskFullWrites fills the gateway's disk to the last byte and
// then drives the writes that no free-space measure of billable requests
// guards, only the store's own check: key creation and revocation on the
// admin API and through the CLI, budgets, the console's key form, and
// tasks, whose record the store refuses within the second that the
// gateway's free-space measure of billable requests may lag (TestFaultDiskFull
// drives chat and tasks after it). Issue #30: an independent fault kit got 201 for 7 of 8 keys
// created on a full disk, and then the process died of SIGBUS in Badger's
// memtable write. Every write must be refused with 507 (the API's with
// code storage_full) and no key answered 201; the process lives; once the
// filler is removed every write succeeds again without a restart, and the
// keys created then survive a restart, and a stop on a full disk.
func TestFaultDiskFullWrites(t *testing.T) {
	dir := mountTmpfs(t, diskSize)
	up := newIDUpstream(t)
	cfg := idConfig(t, dir, up, diskOption)
	p := startProcess(t, cfg, dir)
	const user = "fullwriter"
	key := procCreateKey(t, user)
	before := procKeyIDs(t, user)
	writes := diskWrites(t, p, cfg, user, before[0])

	filler := fillAll(t, dir)
	t.Logf("the disk is full: %s free", mib(freeSpace(t, dir)))
	for _, w := range writes {
		for i := range w.times {
			status, body := w.do()
			if status == http.StatusCreated || status == http.StatusOK || status == http.StatusAccepted || status == w.ok {
				t.Errorf("%s #%d on a full disk: %d %.200s, want 507", w.name, i+1, status, body)
			} else if status != http.StatusInsufficientStorage {
				t.Errorf("%s #%d on a full disk: %d %.200s, want 507", w.name, i+1, status, body)
			}
			if !p.running() {
				t.Fatalf("the gateway died on a full disk at %s #%d: %s", w.name, i+1, deathNote(p))
			}
		}
	}
	if !answers(p) {
		t.Fatalf("the gateway does not answer on a full disk: %s", deathNote(p))
	}
	if got := procKeyIDs(t, user); len(got) != len(before) {
		t.Errorf("keys of %s after the refused creations: %d, want %d", user, len(got), len(before))
	}
	// Reads go on.
	if status, body := getStatus(t, p.url("/v1/models"), key); status != http.StatusOK {
		t.Errorf("GET /v1/models on a full disk: %d %.200s", status, body)
	}

	// Space returns: every write succeeds again, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, w := range writes {
		var status int
		var body string
		eventually(t, 10*time.Second, w.name+" succeeds once space is freed", func() bool {
			status, body = w.do()
			return status == w.ok
		})
		if status != w.ok {
			t.Errorf("%s after space was freed: %d %.200s, want %d", w.name, status, body, w.ok)
		}
	}
	created := procKeyIDs(t, user)
	if len(created) <= len(before) {
		t.Fatalf("no key was created after space was freed")
	}
	// What was answered 201 is durable: it survives a restart.
	p.stop()
	p = startProcess(t, cfg, dir)
	if got := procKeyIDs(t, user); len(got) != len(created) {
		t.Errorf("keys after a restart: %d, want the %d created", len(got), len(created))
	}
	// A stop on a full disk: Badger's last flush would fault, so the
	// store is left as a crash leaves it, and nothing is lost.
	status, body := writes[0].do()
	if status != http.StatusCreated {
		t.Fatalf("creating a key before the last fill: %d %.200s", status, body)
	}
	filler = fillAll(t, dir)
	p.stop()
	if strings.Contains(p.log.String(), "unexpected fault address") {
		t.Errorf("the gateway died on a full disk while it stopped: %s", deathNote(p))
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	p = startProcess(t, cfg, dir)
	if got := procKeyIDs(t, user); len(got) != len(created)+1 {
		t.Errorf("keys after a stop on a full disk: %d, want %d", len(got), len(created)+1)
	}
	p.stop()
}

// diskWrite is one way of writing to the gateway: do returns the status
// and the body; ok is its status once there is room.
type diskWrite struct {
	name  string
	times int
	ok    int
	do    func() (int, string)
}

// diskWrites are the writes of TestFaultDiskFullWrites, for user and one of
// its keys.
func diskWrites(t *testing.T, p *process, cfg, user, keyID string) []diskWrite {
	client := &http.Client{Timeout: 20 * time.Second}
	admin := func(method, path, body string) func() (int, string) {
		return func() (int, string) {
			req, _ := http.NewRequest(method, "http://"+procAdminAddr+path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			return doStatus(client, req)
		}
	}
	secret := procCreateKey(t, user+"-caller") // now: the disk fills later
	task := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, p.url("/v1/tasks"), strings.NewReader(`{"model":"mock-image","prompt":"a full disk","size":"256x256"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+secret)
		status, b := doStatus(client, req)
		if status == http.StatusInsufficientStorage && !strings.Contains(b, `"storage_full"`) {
			return 0, "507 without the code storage_full: " + b
		}
		return status, b
	}
	return []diskWrite{
		{"POST /air/keys", 8, http.StatusCreated, admin(http.MethodPost, "/air/keys", fmt.Sprintf(`{"user":%q,"name":"on a full disk"}`, user))},
		{"caddy air key create", 2, http.StatusCreated, func() (int, string) { return cliCreateKey(cfg, user) }},
		{"PUT /air/budgets", 2, http.StatusOK, admin(http.MethodPut, "/air/budgets/user/"+user, `{"monthly":"5"}`)},
		// The form answers a created key with 303 to the page that shows it.
		{"the console's key form", 2, http.StatusSeeOther, func() (int, string) { return consoleCreateKey(p, client) }},
		// Within a second of the fill the gateway's free-space measure
		// may still let a task in: the store refuses its record then.
		{"POST /v1/tasks", 2, http.StatusAccepted, task},
		// Last: it revokes the key that the budget write above used.
		{"DELETE /air/keys", 2, http.StatusOK, admin(http.MethodDelete, "/air/keys/"+keyID, "")},
	}
}

// doStatus sends req and returns the status and the body; status 0 when
// there was no answer.
func doStatus(client *http.Client, req *http.Request) (int, string) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// cliCreateKey runs `caddy air key create` and returns 201 when it
// printed a key, else the status that its error names (the admin API's).
func cliCreateKey(cfg, user string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, caddyBin, "air", "key", "create", "--user", user, "--config", cfg)
	cmd.Dir = ".."
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	switch text := lastLine(out.String()); {
	case err == nil && strings.HasPrefix(text, "sk-air-"):
		return http.StatusCreated, ""
	case err != nil && strings.Contains(text, "storage full"):
		// The CLI prints the admin API's error, which was a 507.
		return http.StatusInsufficientStorage, text
	default:
		return 0, fmt.Sprintf("%v: %s", err, text)
	}
}

// consoleCreateKey creates a key with the console's form, as its demo
// user, and returns the status of the answer.
func consoleCreateKey(p *process, client *http.Client) (int, string) {
	get, _ := http.NewRequest(http.MethodGet, p.url("/console/keys"), nil)
	get.SetBasicAuth(demoUser, demoPassword)
	status, page := doStatus(client, get)
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(page)
	ft := regexp.MustCompile(`name="form_token" value="([^"]+)"`).FindStringSubmatch(page)
	if status != http.StatusOK || m == nil || ft == nil {
		return status, "the keys page: " + page
	}
	form := url.Values{"csrf_token": {m[1]}, "form_token": {ft[1]}, "name": {"console on a full disk"}}
	post, _ := http.NewRequest(http.MethodPost, p.url("/console/keys"), strings.NewReader(form.Encode()))
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	post.SetBasicAuth(demoUser, demoPassword)
	// The 303 of a created key is the answer: not followed.
	noFollow := *client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	status, page = doStatus(&noFollow, post)
	if m := regexp.MustCompile(`id="form-error">([^<]*)<`).FindStringSubmatch(page); m != nil {
		page = m[1] // the page's error message
	}
	return status, page
}

// procKeyIDs returns the ids of user's keys, from the gateway process's
// admin API.
func procKeyIDs(t *testing.T, user string) []string {
	t.Helper()
	resp, err := http.Get("http://" + procAdminAddr + "/air/keys?user=" + url.QueryEscape(user))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("listing keys: %d %v", resp.StatusCode, err)
	}
	ids := make([]string, len(list))
	for i, k := range list {
		ids[i] = k.ID
	}
	return ids
}

// fillAll writes a filler file in dir until its file system has no byte
// left, and returns its path.
func fillAll(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 512} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatal(err)
				}
				break
			}
		}
	}
	return path
}
