package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// The fault suite (issue #15, "Hardening") drives separate gateway
// processes through kills, full disks, hostile bodies, slow clients and
// reloads. Each scenario is a TestFault… test; each adds a row to a table
// that TestMain prints when the package ends. CI runs the reduced form;
// FAULTS_FULL=1 (scripts/faults.sh) runs the full rounds.

// faultsFull reports whether the full form of the fault suite runs.
var faultsFull = os.Getenv("FAULTS_FULL") == "1"

// faultRounds returns full in the full form of the suite, reduced else.
func faultRounds(reduced, full int) int {
	if faultsFull {
		return full
	}
	return reduced
}

// faultRow is one line of the fault suite's summary table.
type faultRow struct {
	scenario string
	measured string
	target   string
	result   string
}

var faultTable struct {
	mu   sync.Mutex
	rows []faultRow
}

// reportFault adds the row of t's scenario to the summary table. The
// measurement is read when t ends, so a test reports what it measured
// even when it stops early, and the row says whether the test passed.
func reportFault(t *testing.T, scenario, target string, measured func() string) {
	t.Helper()
	t.Cleanup(func() {
		result := "pass"
		if t.Failed() {
			result = "FAIL"
		}
		faultTable.mu.Lock()
		defer faultTable.mu.Unlock()
		faultTable.rows = append(faultTable.rows, faultRow{scenario: scenario, measured: measured(), target: target, result: result})
	})
}

// printFaultTable writes the summary table in markdown, if any scenario
// ran.
func printFaultTable(w io.Writer) {
	faultTable.mu.Lock()
	defer faultTable.mu.Unlock()
	if len(faultTable.rows) == 0 {
		return
	}
	form := "reduced (CI)"
	if faultsFull {
		form = "full (FAULTS_FULL=1)"
	}
	fmt.Fprintf(w, "\n## Fault suite, %s form\n\n", form)
	fmt.Fprintln(w, "| Scenario | Measured | Target | Result |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, r := range faultTable.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.scenario, r.measured, r.target, r.result)
	}
	fmt.Fprintln(w)
}

// raiseFileLimit raises this process's open-files limit to at least n (up
// to the hard limit) and fails if that is not enough. Processes it starts
// afterwards inherit the raised limit.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < n {
		t.Fatalf("the open-files hard limit is %d; this test needs %d (raise it with ulimit -Hn, as root)", lim.Max, n)
	}
	if lim.Cur >= n {
		return
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("raising the open-files limit to %d: %v", lim.Cur, err)
	}
}

// procCreateKey creates a key for user through the admin API of the
// process that startProcess started.
func procCreateKey(t *testing.T, user string) string {
	t.Helper()
	resp, err := http.Post("http://"+procAdminAddr+"/air/keys", "application/json", strings.NewReader(fmt.Sprintf(`{"user":%q,"name":"faults"}`, user)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != http.StatusCreated || !strings.HasPrefix(out.Key, "sk-air-") {
		t.Fatalf("creating a key: %d %s", resp.StatusCode, body)
	}
	return out.Key
}

// mib formats a byte count in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
