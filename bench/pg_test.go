package main

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for i, tc := range []struct {
		stat    string
		want    procStat
		wantErr bool
	}{
		{
			stat: "4242 (postgres) S 4100 4242 4242 0 -1 4194560 12345 0 0 0 250 130 70 30 20 0 12 0 100 2000000 5000",
			want: procStat{PPID: 4100, CPU: 3800 * time.Millisecond, Children: time.Second},
		},
		{
			// A command name with spaces and a parenthesis.
			stat: "7 (postgres: air airbench 127.0.0.1(5) idle) S 9 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1",
			want: procStat{PPID: 9, CPU: 30 * time.Millisecond},
		},
		{stat: "7 postgres S 1", wantErr: true},
		{stat: "7 (postgres) S 1 7 7 0 -1 0 0 0 0 0 1 2 0", wantErr: true},
		{stat: "7 (postgres) S x 7 7 0 -1 0 0 0 0 0 1 2 0 0 20", wantErr: true},
	} {
		got, err := parseStat([]byte(tc.stat))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: error %v, want error %v", i, err, tc.wantErr)
		}
		if err == nil && got != tc.want {
			t.Errorf("Test %d: got %+v, want %+v", i, got, tc.want)
		}
	}
}

// TestClusterCPUCountsChildren treats this test process as a postmaster:
// a child that burns CPU and exits is still counted, through cutime.
func TestClusterCPUCountsChildren(t *testing.T) {
	before, err := clusterCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A busy child: a shell loop, a tenth of a second of CPU or more.
	cmd := exec.Command("sh", "-c", `i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done`)
	if err := cmd.Run(); err != nil {
		t.Fatalf("sh: %v", err)
	}
	after, err := clusterCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after - before; d < 30*time.Millisecond {
		t.Errorf("cluster CPU grew by %v across a busy child, want its CPU counted (≥ 30 ms)", d)
	}
}

// TestBaselineOf: n instances on PostgreSQL are compared with n bare
// Caddy processes when the run had them, everything else with one.
func TestBaselineOf(t *testing.T) {
	withThree := &pgScenario{Runs: map[string][]pgRun{bareLabel: nil, bareManyLabel(3): nil}}
	withoutThree := &pgScenario{Runs: map[string][]pgRun{bareLabel: nil}}
	for i, tc := range []struct {
		sc    *pgScenario
		label string
		want  string
	}{
		{withThree, pgManyLabel(3), bareManyLabel(3)},
		{withThree, pgOneLabel, bareLabel},
		{withThree, bareManyLabel(3), bareLabel},
		{withThree, pgManyLabel(2), bareLabel},
		{withoutThree, pgManyLabel(3), bareLabel},
	} {
		if got := baselineOf(tc.sc, tc.label); got != tc.want {
			t.Errorf("Test %d: %s is compared with %q, want %q", i, tc.label, got, tc.want)
		}
	}
}
