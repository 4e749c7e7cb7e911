package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowBodyPeakLimit is the most resident memory the gateway may use while
// 2,000 clients trickle their bodies (issue #15).
const slowBodyPeakLimit = 150 << 20

// TestFaultSlowBodies opens 2,000 connections that each declare a 16 MiB
// chat body, with a valid key, and then send it a few bytes a second. The
// gateway must not hold memory for what a client declares but has not
// sent: its peak resident memory stays within slowBodyPeakLimit, and it
// answers normally afterwards.
func TestFaultSlowBodies(t *testing.T) {
	const conns = 2000
	hold := 10 * time.Second
	raiseFileLimit(t, conns+1000)

	var peak int64
	reportFault(t, "slow bodies: peak RSS at 2,000 connections", "≤ "+mib(slowBodyPeakLimit), func() string { return mib(peak) })
	dataDir := t.TempDir()
	p := startProcess(t, quickstartConfig(t, dataDir, ""), dataDir)
	key := procCreateKey(t, "slowpoke")

	if lim, err := openFilesLimit(p.pid()); err != nil || lim < conns+100 {
		t.Fatalf("the gateway may open %d files (%v); it needs more than %d connections", lim, err, conns)
	}
	idle, err := readMem(p.pid())
	if err != nil {
		t.Fatal(err)
	}
	resetHWM(p.pid())
	head := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: localhost:%s\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"model\":\"mock-gpt\",\"messages\":[", procHTTPPort, key, 16<<20)
	open := dialSlow(t, conns, head)
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	if len(open) < conns {
		t.Errorf("%d of %d connections opened", len(open), conns)
	}

	// Trickle a message a second into every body while sampling the
	// gateway's memory.
	stop := time.Now().Add(hold)
	for time.Now().Before(stop) {
		for _, c := range open {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write([]byte(`{"role":"user","content":"slow"},`))
		}
		for range 10 {
			if m, err := readMem(p.pid()); err == nil {
				peak = max(peak, m.rss, m.hwm)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !p.running() {
		t.Fatalf("the gateway exited while %d slow bodies were open", len(open))
	}
	if m, err := readMem(p.pid()); err == nil {
		peak = max(peak, m.rss, m.hwm)
	}
	for _, c := range open {
		c.Close()
	}
	open = nil
	t.Logf("%d slow bodies for %v: peak RSS %s (idle %s)", conns, hold, mib(peak), mib(idle.rss))
	if peak > slowBodyPeakLimit {
		t.Errorf("peak RSS %s with %d slow bodies open, want ≤ %s", mib(peak), conns, mib(slowBodyPeakLimit))
	}
	if status, body := getStatus(t, p.url("/v1/models"), key); status != http.StatusOK {
		t.Errorf("after the slow bodies: %d %s", status, body)
	}
}

// dialSlow opens n connections to the gateway process, 50 at a time, and
// writes head (a request's headers and the start of its body) on each.
func dialSlow(t *testing.T, n int, head string) []net.Conn {
	t.Helper()
	var (
		mu    sync.Mutex
		conns []net.Conn
		errs  int
		first error
		wg    sync.WaitGroup
	)
	sem := make(chan struct{}, 50)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := net.DialTimeout("tcp", "localhost:"+procHTTPPort, 10*time.Second)
			if err == nil {
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err = c.Write([]byte(head)); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				if first == nil {
					first = err
				}
				return
			}
			conns = append(conns, c)
		}()
	}
	wg.Wait()
	if errs > 0 {
		t.Logf("%d connections failed, the first with %v", errs, first)
	}
	return conns
}

// memStatus holds a process's resident memory, in bytes: VmRSS now and
// VmHWM, the peak since start or since resetHWM.
type memStatus struct{ rss, hwm int64 }

// readMem reads the memory figures of process pid from /proc.
func readMem(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	var m memStatus
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, val, _ := strings.Cut(sc.Text(), ":")
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %v", name, err)
		}
		switch name {
		case "VmRSS":
			m.rss = kb << 10
		case "VmHWM":
			m.hwm = kb << 10
		}
	}
	if m.rss == 0 {
		return m, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	return m, nil
}

// resetHWM resets VmHWM of process pid to its current RSS, so that it
// reports the peak of what follows; where that is not permitted, VmHWM
// keeps the peak since the process started, which only overstates.
func resetHWM(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// openFilesLimit returns the soft open-files limit of process pid, from
// /proc/<pid>/limits.
func openFilesLimit(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			if f[0] == "unlimited" {
				return math.MaxInt, nil
			}
			return strconv.Atoi(f[0])
		}
	}
	return 0, fmt.Errorf("/proc/%d/limits has no open-files limit", pid)
}
