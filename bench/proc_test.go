package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseStatCPU(t *testing.T) {
	for i, tc := range []struct {
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			stat: "4242 (caddy) S 1 4242 4242 0 -1 4194560 12345 0 0 0 250 130 0 0 20 0 12 0 100 2000000 5000 18446744073709551615",
			want: 3800 * time.Millisecond,
		},
		{
			// A command name with spaces and a parenthesis.
			stat: "7 (my ) proc) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 1 1 1",
			want: 30 * time.Millisecond,
		},
		{stat: "7 caddy S 1", wantErr: true},
		{stat: "7 (caddy) S 1 7 7 0", wantErr: true},
		{stat: "7 (caddy) S 1 7 7 0 -1 0 0 0 0 0 x 2 0", wantErr: true},
	} {
		got, err := parseStatCPU([]byte(tc.stat))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: error %v, want error %v", i, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		if got != tc.want {
			t.Errorf("Test %d: got %v, want %v", i, got, tc.want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	status := strings.Join([]string{
		"Name:\tcaddy",
		"VmPeak:\t 1500000 kB",
		"VmHWM:\t   81920 kB",
		"VmRSS:\t   40960 kB",
		"RssAnon:\t   10240 kB",
		"RssFile:\t   29696 kB",
		"RssShmem:\t    1024 kB",
		"Threads:\t12",
	}, "\n")
	for i, tc := range []struct {
		status  string
		want    memStatus
		wantErr bool
	}{
		{status: status, want: memStatus{RSS: 40 << 20, HWM: 80 << 20, Anon: 10 << 20, File: 30 << 20}},
		{status: "VmHWM:\t 2 kB\nVmRSS:\t 1 kB\n", want: memStatus{RSS: 1 << 10, HWM: 2 << 10}},
		{status: "Name:\tcaddy\nVmRSS:\t 1 kB\n", wantErr: true},
		{status: "VmRSS:\t 1 MB\nVmHWM:\t 1 kB\n", wantErr: true},
	} {
		got, err := parseStatus([]byte(tc.status))
		if (err != nil) != tc.wantErr {
			t.Errorf("Test %d: error %v, want error %v", i, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		if got != tc.want {
			t.Errorf("Test %d: got %+v, want %+v", i, got, tc.want)
		}
	}
}

// TestOwnProcess reads this test process's own /proc files.
func TestOwnProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("processCPU: %v", err)
	}
	m, err := processMem(os.Getpid())
	if err != nil {
		t.Fatalf("processMem: %v", err)
	}
	if m.RSS <= 0 || m.HWM < m.RSS {
		t.Errorf("processMem = %+v: want 0 < RSS <= HWM", m)
	}
}

func TestMedianRSS(t *testing.T) {
	t0 := time.Unix(1000, 0)
	samples := []rssSample{
		{At: t0, RSS: 10}, {At: t0.Add(time.Second), RSS: 50}, {At: t0.Add(2 * time.Second), RSS: 30},
		{At: t0.Add(3 * time.Second), RSS: 40}, {At: t0.Add(4 * time.Second), RSS: 90, Anon: 60, File: 30},
	}
	if got := medianRSS(samples, t0.Add(time.Second), t0.Add(4*time.Second)); got != 40 {
		t.Errorf("median of the window = %d, want 40 (the samples from 1 s up to, not including, 4 s)", got)
	}
	if got := medianRSS(samples, t0.Add(10*time.Second), t0.Add(11*time.Second)); got != 0 {
		t.Errorf("median of an empty window = %d, want 0", got)
	}
	if got := peakSample(samples); got != samples[4] {
		t.Errorf("peakSample = %+v, want %+v", got, samples[4])
	}
}
