package main

import (
	"strings"
	"testing"
	"time"
)

func TestIdleCPUString(t *testing.T) {
	r := &idleCPU{Over: 20 * time.Second, CPU: map[string]time.Duration{bareLabel: 0, airLabel: 50 * time.Millisecond}}
	got := r.String()
	for _, want := range []string{"for 20s", "bare Caddy 0 ms (0.00% of a core)", "caddy-air 50 ms (0.25% of a core)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if (*idleCPU)(nil).String() != "" {
		t.Error("no measurement should print nothing")
	}
}
