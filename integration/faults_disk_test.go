package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Disk-full parameters: the gateway's data dir is a tmpfs of diskSize; it
// refuses billable work with 507 once less than its margin is free
// (`min_free_space` plus the store's reserve, about 16 MiB: see
// procMargin), and each round starts with diskHeadroom free
// above the margin. The disk leaves room for three rounds of task media.
const (
	diskSize     = 128 << 20
	diskHeadroom = 6 << 20
	diskOption   = "\t\tmin_free_space 16MiB"
)

// procMargin is the free-space margin of the gateway process, from its
// health report.
func procMargin(t *testing.T) int64 {
	t.Helper()
	resp, err := http.Get("http://" + procAdminAddr + "/air/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Storage struct {
			MarginBytes int64 `json:"margin_bytes"`
		} `json:"storage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Storage.MarginBytes <= 0 {
		t.Fatalf("reading the gateway's storage margin: %v %+v", err, h)
	}
	return h.Storage.MarginBytes
}

// diskRound is what one disk-full round saw.
type diskRound struct {
	ok, refused, created int
}

// TestFaultDiskFull puts the gateway's data dir on a small tmpfs, fills it
// to just above the gateway's free-space margin and runs chat, messages and
// image-task clients until the gateway refuses work. The contract (issue
// #15): below `min_free_space` the gateway answers billable requests with
// 507 and error code storage_full before it contacts an upstream, reads
// (GET /v1/tasks, /v1/models) keep working, and once space is freed writes
// resume without a restart. The process never crashes, every request
// answered 200 has exactly one ledger record, and no task is billed whose
// creation the client did not receive.
func TestFaultDiskFull(t *testing.T) {
	rounds := faultRounds(1, 3)
	const user = "filler"
	var results []diskRound
	answered := map[string]bool{} // ids of chat and messages answered 200
	created := map[string]bool{}  // ids of tasks whose creation was answered
	var crashes int
	lostText := "?" // until the ledger has been read
	reportFault(t, "disk full: rounds / crashes / records lost", "0 crashes, 0 lost", func() string {
		return fmt.Sprintf("%d rounds / %d crashes / %s lost", len(results), crashes, lostText)
	})
	dir := mountTmpfs(t, diskSize)
	up := newIDUpstream(t)
	cfg := idConfig(t, dir, up, diskOption)
	p := startProcess(t, cfg, dir)
	key := procCreateKey(t, user)
	client := &http.Client{Timeout: 20 * time.Second}

	for round := range rounds {
		filler := fillDisk(t, dir, procMargin(t)+diskHeadroom)
		r, ids, tasks := diskLoad(p, key, 30*time.Second)
		for _, id := range ids {
			answered[id] = true
		}
		for _, id := range tasks {
			created[id] = true
		}
		t.Logf("round %d: %d answered 200, %d tasks created, %d refused with 507 storage_full, %s free at the end",
			round+1, r.ok, r.created, r.refused, mib(freeSpace(t, dir)))
		if !p.running() || !answers(p) {
			crashes++
			t.Errorf("round %d: the gateway crashed on a full disk: %s", round+1, deathNote(p))
			p.sigkill()
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
			p = startProcess(t, cfg, dir)
			continue
		}
		results = append(results, r)
		if r.refused == 0 {
			t.Errorf("round %d: no request was refused with 507 within 30 s, with %s free at the end", round+1, mib(freeSpace(t, dir)))
		}
		// A refused request never reaches the upstream. (Should the store
		// have compacted itself back above the margin, the request is
		// served, which is no fault.)
		hits := up.hits.Load()
		status, id, err := idCalls[0].do(context.Background(), client, p.url(""), key)
		switch {
		case status == http.StatusOK && id != "":
			answered[id] = true
			t.Logf("round %d: after the load a chat request was served again, with %s free", round+1, mib(freeSpace(t, dir)))
		case status != http.StatusInsufficientStorage || err != nil:
			t.Errorf("round %d: a chat request on a full disk: %d %v, want 507 storage_full", round+1, status, err)
		case up.hits.Load() != hits:
			t.Errorf("round %d: a chat request refused on a full disk reached the upstream %d times", round+1, up.hits.Load()-hits)
		}
		// Reads keep working on a full disk.
		for _, path := range []string{"/v1/models", "/v1/tasks?limit=5"} {
			if status, body := getStatus(t, p.url(path), key); status != http.StatusOK {
				t.Errorf("round %d: GET %s on a full disk: %d %.200s", round+1, path, status, body)
			}
		}
		// Freeing space lets writes resume, without a restart.
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "a chat request succeeds once space is freed", func() bool {
			status, id, _ := idCalls[0].do(context.Background(), client, p.url(""), key)
			if status == http.StatusOK && id != "" {
				answered[id] = true
			}
			return status == http.StatusOK
		})
		status, id = createImageTask(p, key)
		if status != http.StatusAccepted {
			t.Errorf("round %d: creating an image task after freeing space: %d", round+1, status)
		} else {
			created[id] = true
		}
	}

	// The ledger, read after a clean restart.
	p.stop()
	p = startProcess(t, cfg, dir)
	recs := procLedger(t, user)
	checkLedgerSums(t, user, "after the disk-full rounds", recs)
	counts := map[string]int{}
	var billed, wrong []string
	for _, rec := range recs {
		counts[rec.ID]++
		if rec.Endpoint == "tasks" && !created[rec.ID] {
			billed = append(billed, rec.ID)
		}
	}
	lost := 0
	for id := range answered {
		if counts[id] == 0 {
			lost++
		}
		if counts[id] != 1 {
			wrong = append(wrong, fmt.Sprintf("%s (%d records)", id, counts[id]))
		}
	}
	if len(billed) > 0 {
		t.Errorf("%d tasks were billed whose creation was not answered, e.g. %s", len(billed), examples(billed))
	}
	if len(wrong) > 0 {
		t.Errorf("%d requests answered 200 do not have exactly one ledger record, e.g. %s", len(wrong), examples(wrong))
	}
	lostText = fmt.Sprint(lost)
	t.Logf("%d rounds: %d requests answered 200, %d tasks created, %d records, %d lost, %d crashes",
		rounds, len(answered), len(created), len(recs), lost, crashes)
	p.stop()
}

// diskLoad runs one client of each idCall and two image-task clients
// against p until it has refused 20 requests with 507, or for at most
// limit. It returns what clients saw, the ids of the requests answered 200
// and of the tasks created. Only a 507 with code storage_full counts as
// refused.
func diskLoad(p *process, key string, limit time.Duration) (r diskRound, ids, tasks []string) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	client := &http.Client{Timeout: 20 * time.Second}
	var mu sync.Mutex
	var wg sync.WaitGroup
	refused := func() {
		mu.Lock()
		defer mu.Unlock()
		r.refused++
		if r.refused >= 20 {
			cancel()
		}
	}
	for i := range len(idCalls) + 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if i >= len(idCalls) {
					status, id := createImageTask(p, key)
					switch {
					case status == http.StatusAccepted:
						mu.Lock()
						r.created++
						tasks = append(tasks, id)
						mu.Unlock()
					case status == http.StatusInsufficientStorage:
						refused()
					}
					continue
				}
				status, id, err := idCalls[i].do(ctx, client, p.url(""), key)
				switch {
				case status == http.StatusOK && id != "":
					mu.Lock()
					r.ok++
					ids = append(ids, id)
					mu.Unlock()
				case status == http.StatusInsufficientStorage && err == nil:
					refused()
				}
			}
		}()
	}
	wg.Wait()
	return r, ids, tasks
}

// createImageTask creates a 1024x1024 image task of the mock provider and
// returns the status and, for 202, the task's id. A 507 must carry the
// error code storage_full, or the status is reported as 0.
func createImageTask(p *process, key string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, p.url("/v1/tasks"), strings.NewReader(`{"model":"mock-image","prompt":"fill the disk","size":"1024x1024"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		ID    string `json:"id"`
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &v)
	switch {
	case resp.StatusCode == http.StatusInsufficientStorage && v.Error.Code != "storage_full":
		return 0, ""
	case resp.StatusCode == http.StatusAccepted && v.ID == "":
		return 0, ""
	}
	return resp.StatusCode, v.ID
}

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory and
// unmounts it when the test ends. It needs root (CI runs as root).
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("mounting a tmpfs for the disk-full scenario needs root (uid %d): %v: %s", os.Getuid(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("unmounting %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// freeSpace returns the bytes free for an unprivileged writer in dir's
// file system.
func freeSpace(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fillDisk writes a filler file in dir that leaves about free bytes free,
// and returns its path.
func fillDisk(t *testing.T, dir string, free int64) string {
	t.Helper()
	n := freeSpace(t, dir) - free
	if n <= 0 {
		t.Fatalf("%s has only %s free, want more than %s", dir, mib(freeSpace(t, dir)), mib(free))
	}
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for n > 0 {
		w := min(n, int64(len(chunk)))
		if _, err := f.Write(chunk[:w]); err != nil {
			t.Fatalf("writing the filler: %v", err)
		}
		n -= w
	}
	return path
}
