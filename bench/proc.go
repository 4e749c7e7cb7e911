package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat.
// It is 100 on every Linux architecture Go supports.
const clockTicks = 100

// parseStatCPU returns utime+stime from the content of /proc/<pid>/stat.
// The command name (field 2) may hold spaces and parentheses, so fields
// are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	// After ") " come fields 3 (state) onwards; utime and stime are
	// fields 14 and 15.
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: utime: %v", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("stat: stime: %v", err)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// memStatus is the memory part of /proc/<pid>/status, in bytes.
type memStatus struct {
	// RSS is VmRSS, the resident set size now.
	RSS int64
	// HWM is VmHWM, the peak resident set size since the process started
	// or since it was last reset through clear_refs.
	HWM int64
	// Anon is RssAnon, the resident anonymous memory (Go heap, stacks);
	// File is RssFile plus RssShmem, the resident pages of mapped files
	// (the binary, Badger's tables and write-ahead log). Zero when the
	// kernel does not report them.
	Anon, File int64
}

// parseStatus reads VmRSS and VmHWM, and RssAnon, RssFile and RssShmem
// where present, from the content of /proc/<pid>/status.
func parseStatus(status []byte) (memStatus, error) {
	var m memStatus
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "VmRSS":
			dst = &m.RSS
			seen++
		case "VmHWM":
			dst = &m.HWM
			seen++
		case "RssAnon":
			dst = &m.Anon
		case "RssFile", "RssShmem":
			dst = &m.File
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("status: %s: unexpected value %q", name, val)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("status: %s: %v", name, err)
		}
		*dst += kb << 10
	}
	if seen != 2 {
		return m, fmt.Errorf("status: VmRSS or VmHWM missing")
	}
	return m, nil
}

// processCPU returns the CPU time (user+system) process pid used so far.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// processMem returns the memory figures of process pid.
func processMem(pid int) (memStatus, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memStatus{}, err
	}
	return parseStatus(b)
}

// resetHWM resets VmHWM of process pid to its current RSS (Linux 4.0+,
// needs permission to write the process's clear_refs). It reports whether
// the reset worked.
func resetHWM(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// rssSample is one reading of a process's resident memory.
type rssSample struct {
	At              time.Time
	RSS, Anon, File int64
}

// sampler reads the RSS of a process at a fixed interval until stopped.
type sampler struct {
	pid     int
	once    sync.Once
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []rssSample
}

// startSampler starts sampling the RSS of pid every interval.
func startSampler(pid int, interval time.Duration) *sampler {
	s := &sampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run(interval)
	return s
}

func (s *sampler) run(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.stop:
			s.sample()
			return
		case <-t.C:
		}
	}
}

func (s *sampler) sample() {
	m, err := processMem(s.pid)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.samples = append(s.samples, rssSample{At: time.Now(), RSS: m.RSS, Anon: m.Anon, File: m.File})
	s.mu.Unlock()
}

// Stop ends sampling and returns every sample taken. Calling it again
// returns the same samples.
func (s *sampler) Stop() []rssSample {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples
}

// peakSample returns the sample with the largest RSS.
func peakSample(samples []rssSample) rssSample {
	var peak rssSample
	for _, s := range samples {
		if s.RSS > peak.RSS {
			peak = s
		}
	}
	return peak
}

// medianRSS returns the median RSS of the samples taken in [from, to), or
// 0 when there are none.
func medianRSS(samples []rssSample, from, to time.Time) int64 {
	var xs []float64
	for _, s := range samples {
		if !s.At.Before(from) && s.At.Before(to) {
			xs = append(xs, float64(s.RSS))
		}
	}
	return int64(median(xs))
}
