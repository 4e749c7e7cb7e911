package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgCluster is the throwaway PostgreSQL cluster of scenario pg, started
// with scripts/pg.sh on loopback with PostgreSQL's durable defaults.
type pgCluster struct {
	root string
	dir  string
	// DSN names the bench's database on it.
	DSN string
	// Postmaster is the pid of the server's main process; the backends
	// are its children.
	Postmaster int
}

// startPG starts a cluster and creates the bench's database on it.
func startPG(ctx context.Context, root string) (*pgCluster, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "pg.sh"), "start")
	cmd.Env = append(os.Environ(), "AIR_PG_DURABLE=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/pg.sh start: %v", err)
	}
	c := &pgCluster{root: root}
	var super string
	for line := range strings.Lines(string(out)) {
		k, v, _ := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "export ")), "=")
		switch v = strings.Trim(v, "'"); k {
		case "AIR_TEST_PG_DSN":
			super = v
		case "AIR_TEST_PG_DIR":
			c.dir = v
		}
	}
	if super == "" || c.dir == "" {
		return nil, fmt.Errorf("scripts/pg.sh start printed no DSN: %q", out)
	}
	if err := c.setup(ctx, super); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// setup creates the database and finds the postmaster.
func (c *pgCluster) setup(ctx context.Context, super string) error {
	conn, err := pgx.Connect(ctx, super)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE airbench TEMPLATE template0"); err != nil {
		return err
	}
	u, err := url.Parse(super)
	if err != nil {
		return err
	}
	u.Path = "/airbench"
	c.DSN = u.String()
	b, err := os.ReadFile(filepath.Join(c.dir, "data", "postmaster.pid"))
	if err != nil {
		return err
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if c.Postmaster, err = strconv.Atoi(strings.TrimSpace(first)); err != nil {
		return fmt.Errorf("postmaster.pid: %v", err)
	}
	return nil
}

// Stop stops the cluster and removes its folder.
func (c *pgCluster) Stop() {
	if c.dir != "" {
		_ = exec.Command(filepath.Join(c.root, "scripts", "pg.sh"), "stop", c.dir).Run()
	}
}

// procStat is what scenario pg reads from /proc/<pid>/stat.
type procStat struct {
	PPID int
	// CPU is the process's user+system time; Children that of its
	// children it has waited for (cutime+cstime).
	CPU, Children time.Duration
}

// parseStat reads the parent pid and the CPU times from the content of
// /proc/<pid>/stat.
func parseStat(stat []byte) (procStat, error) {
	var s procStat
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("stat: no command name")
	}
	// Fields from 3 (state): ppid is 4, utime 14, stime 15, cutime 16,
	// cstime 17.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 15 {
		return s, fmt.Errorf("stat: %d fields after the command name, want at least 15", len(f))
	}
	var n [5]int64
	for j, k := range []int{1, 11, 12, 13, 14} {
		v, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil {
			return s, fmt.Errorf("stat: field %d: %v", k+3, err)
		}
		n[j] = v
	}
	tick := time.Second / clockTicks
	s.PPID = int(n[0])
	s.CPU = time.Duration(n[1]+n[2]) * tick
	s.Children = time.Duration(n[3]+n[4]) * tick
	return s, nil
}

// clusterCPU returns the CPU time the cluster used so far: the
// postmaster's, its live children's (backends, WAL writer, checkpointer,
// autovacuum…), and that of the children that exited (in the
// postmaster's cutime+cstime once it reaped them), so that a backend
// that ends between two readings is still counted.
func clusterCPU(postmaster int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", postmaster))
	if err != nil {
		return 0, err
	}
	pm, err := parseStat(b)
	if err != nil {
		return 0, err
	}
	total := pm.CPU + pm.Children
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == postmaster {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		if s, err := parseStat(b); err == nil && s.PPID == postmaster {
			total += s.CPU
		}
	}
	return total, nil
}

// dsnHost returns dsn's host and database, without its user.
func dsnHost(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "?"
	}
	return u.Host + u.Path
}
