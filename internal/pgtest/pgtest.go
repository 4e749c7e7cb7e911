// Package pgtest gives tests a fresh PostgreSQL database on a throwaway
// cluster. The cluster is the one named by AIR_TEST_PG_DSN (scripts/test.sh
// starts one for the whole run with scripts/pg.sh), or, when that is unset,
// one that Main starts for the test binary and removes after it.
//
// Tests that need PostgreSQL fail when it cannot be had and CI=true; outside
// CI they are skipped with the reason, so a machine without PostgreSQL can
// still run the rest.
package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvDSN names the variable holding the superuser DSN of the test cluster.
const EnvDSN = "AIR_TEST_PG_DSN"

var (
	// serverDSN is the cluster's superuser DSN, once known.
	serverDSN string
	// startErr says why no cluster could be had.
	startErr error
	// counter numbers the databases of this process.
	counter atomic.Int64
)

// Main runs the package's tests with a cluster: the one in AIR_TEST_PG_DSN,
// or one it starts with scripts/pg.sh and stops after the tests. Call it
// from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
func Main(m *testing.M) {
	stop := Setup()
	code := m.Run()
	stop()
	os.Exit(code)
}

// Setup makes a cluster available to DSN, for a TestMain that does more
// than Main: the one in AIR_TEST_PG_DSN, or one it starts with
// scripts/pg.sh. Call the returned func after m.Run to stop the latter.
// When no cluster can be had, DSN fails (CI) or skips the tests that ask.
func Setup() (stop func()) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		serverDSN = dsn
		return func() {}
	}
	dir, dsn, err := startCluster()
	if err != nil {
		startErr = err
		return func() {}
	}
	serverDSN = dsn
	return func() { stopCluster(dir) }
}

// DSN creates a fresh, empty database for the test and returns its DSN; the
// database is dropped when the test ends. The package must use Main.
func DSN(t testing.TB) string {
	t.Helper()
	if serverDSN == "" {
		err := startErr
		if err == nil {
			err = fmt.Errorf("pgtest.Main was not called and %s is unset", EnvDSN)
		}
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("no PostgreSQL for this test: %v", err)
	}
	name := fmt.Sprintf("airtest_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, counter.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, serverDSN)
	if err != nil {
		t.Fatalf("connecting to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatalf("creating the test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, serverDSN)
		if err != nil {
			t.Errorf("connecting to the test cluster: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping the test database: %v", err)
		}
	})
	u, err := url.Parse(serverDSN)
	if err != nil {
		t.Fatalf("parsing %s: %v", EnvDSN, err)
	}
	u.Path = "/" + name
	return u.String()
}

// startCluster runs scripts/pg.sh start and returns the cluster's folder
// and DSN.
func startCluster() (dir, dsn string, err error) {
	script, err := findScript()
	if err != nil {
		return "", "", err
	}
	out, err := exec.Command(script, "start").Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return "", "", fmt.Errorf("scripts/pg.sh start: %v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", "", fmt.Errorf("scripts/pg.sh start: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		line = strings.TrimSpace(strings.TrimPrefix(line, "export "))
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "AIR_TEST_PG_DSN":
			dsn = v
		case "AIR_TEST_PG_DIR":
			dir = v
		}
	}
	if dsn == "" || dir == "" {
		return "", "", fmt.Errorf("scripts/pg.sh start printed no DSN: %q", out)
	}
	return dir, dsn, nil
}

func stopCluster(dir string) {
	script, err := findScript()
	if err != nil {
		return
	}
	_ = exec.Command(script, "stop", dir).Run()
}

// findScript finds scripts/pg.sh from the test's working directory (its
// package folder) by walking up to the module root.
func findScript() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			script := filepath.Join(dir, "scripts", "pg.sh")
			if _, err := os.Stat(script); err != nil {
				return "", fmt.Errorf("no scripts/pg.sh in the module root %s", dir)
			}
			return script, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no module root above the working directory")
		}
		dir = parent
	}
}
