package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The instances of TestMultiInstance: each its own site port, admin
// address and data folder, all on one PostgreSQL database.
var multiInstances = [3]struct{ port, admin string }{
	{procHTTPPort, procAdminAddr},
	{procHTTPPortB, procAdminAddrB},
	{"18082", "localhost:12021"},
}

// Bounds of TestMultiInstance's load and of its video tasks.
const (
	multiMaxRequests  = 600              // chat, messages and image requests, all instances
	multiLoadFor      = 10 * time.Second // how long the load runs
	multiLoadPause    = 100 * time.Millisecond
	multiPollInterval = time.Second // the instances' tasks poll_interval
	multiPollSlack    = 150 * time.Millisecond
	multiVideos       = 6 // created before the load, spread over the instances
	multiVideoPolls   = 8 // polls until a video is completed
	// multiLease is the instances' task lease; multiVideoTimeout, the
	// video provider's timeout, bounds a poll well within it.
	multiLease        = 3 * time.Second
	multiVideoTimeout = 2 * time.Second
)

// multiCluster is the three gateway processes of TestMultiInstance.
type multiCluster struct {
	t       *testing.T
	configs [3]string
	dirs    [3]string
	procs   [3]*process
}

// start runs instance i and waits until it answers.
func (c *multiCluster) start(i int) {
	c.t.Helper()
	c.procs[i] = startProcessAt(c.t, multiInstances[i].port, c.configs[i], c.dirs[i], "/v1/models", http.StatusUnauthorized)
}

// instanceName is the upstream API key of instance i's video provider,
// by which the video mock names the poller.
func instanceName(i int) string { return fmt.Sprintf("instance-%c", 'a'+i) }

// multiConfig writes instance i's Caddyfile: the quickstart with the fake
// chat and messages provider u, mock-video served by u's video mock under
// the instance's own upstream key, a short poll interval, its own ports,
// and storage postgres on the test's database.
func multiConfig(t *testing.T, i int, u *multiUpstream, dataDir string) string {
	t.Helper()
	extra := fmt.Sprintf("\t\tprovider fake-video {\n\t\t\tprotocol openai\n\t\t\tbase_url %s/v1\n\t\t\tapi_key %s\n\t\t\tretries 0\n\t\t\ttimeout %s\n\t\t}\n"+
		"\t\ttasks {\n\t\t\tpoll_interval %s\n\t\t\tlease %s\n\t\t}", u.URL, instanceName(i), multiVideoTimeout, multiPollInterval, multiLease)
	cfg := idConfig(t, dataDir, u.idUpstream, extra)
	src, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "storage badger "+dataDir, "storage postgres {env.AIR_TEST_MULTI_PG_DSN}", 1)
	text = strings.Replace(text, "model mock-video mock {", "model mock-video fake-video {", 1)
	text = strings.ReplaceAll(text, ":"+procHTTPPort, ":"+multiInstances[i].port)
	text = strings.Replace(text, "admin "+procAdminAddr, "admin "+multiInstances[i].admin, 1)
	for _, want := range []string{"storage postgres", "model mock-video fake-video", "admin " + multiInstances[i].admin} {
		if !strings.Contains(text, want) {
			t.Fatalf("could not rewrite the quickstart for instance %d: no %q", i, want)
		}
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// adminKey creates a key for user through the admin API at addr and
// returns it and its id.
func adminKey(t *testing.T, addr, user string) (key, id string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/air/keys", "application/json", strings.NewReader(fmt.Sprintf(`{"user":%q,"name":"multi"}`, user)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusCreated || out.ID == "" {
		t.Fatalf("creating a key on %s: %d %s", addr, resp.StatusCode, body)
	}
	return out.Key, out.ID
}

// multiLoad is what the clients of the load saw.
type multiLoad struct {
	mu sync.Mutex
	// answered holds the ids of the chat and messages answers received
	// completely; images the ids of image tasks answered as succeeded.
	answered, images []string
	// perInstance counts the complete answers of each instance.
	perInstance [3]int
	failures    int
	sent        atomic.Int64
}

// run sends the load to the instances of c with key until ctx is done or
// multiMaxRequests were sent: per instance one client of each idCall and
// one of image tasks, each pausing multiLoadPause between requests.
func (l *multiLoad) run(ctx context.Context, c *multiCluster, key string) {
	client := &http.Client{Timeout: 20 * time.Second}
	var wg sync.WaitGroup
	for i := range c.procs {
		base := "http://localhost:" + multiInstances[i].port
		for j := range len(idCalls) + 1 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil && l.sent.Add(1) <= multiMaxRequests {
					var id string
					var ok bool
					if j < len(idCalls) {
						status, got, err := idCalls[j].do(ctx, client, base, key)
						id, ok = got, err == nil && status == http.StatusOK && got != ""
					} else {
						id, ok = imageTask(ctx, client, base, key)
					}
					l.mu.Lock()
					switch {
					case ok && j < len(idCalls):
						l.answered = append(l.answered, id)
						l.perInstance[i]++
					case ok:
						l.images = append(l.images, id)
						l.perInstance[i]++
					default:
						l.failures++
					}
					l.mu.Unlock()
					time.Sleep(multiLoadPause)
				}
			}()
		}
	}
	wg.Wait()
}

// imageTask creates a mock-image task at base and returns its id if it
// was answered as succeeded.
func imageTask(ctx context.Context, client *http.Client, base, key string) (string, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tasks", strings.NewReader(`{"model":"mock-image","prompt":"spread"}`))
	if err != nil {
		return "", false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := client.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var v taskView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusAccepted || v.Status != "succeeded" {
		return "", false
	}
	return v.ID, true
}
