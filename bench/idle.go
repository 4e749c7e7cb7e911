package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// idleCPU is what each target's process used while it served nothing.
type idleCPU struct {
	// Over is how long both were watched, at the same time.
	Over time.Duration
	// CPU is the user+system time each used meanwhile, by target label.
	CPU map[string]time.Duration
}

// measureIdle reads the CPU time of every target's process over d, with
// no load, all at once.
func (b *bench) measureIdle(ctx context.Context, d time.Duration) (*idleCPU, error) {
	res := &idleCPU{Over: d, CPU: map[string]time.Duration{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, len(b.targets))
	for _, t := range b.targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := t.proc.PID()
			c0, err := processCPU(pid)
			if err != nil {
				errs <- err
				return
			}
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			case <-time.After(d):
			}
			c1, err := processCPU(pid)
			if err != nil {
				errs <- err
				return
			}
			mu.Lock()
			res.CPU[t.Label()] = c1 - c0
			mu.Unlock()
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("idle CPU: %v", err)
	}
	return res, nil
}

// String renders the idle figures as a Markdown paragraph.
func (r *idleCPU) String() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, label := range []string{bareLabel, airLabel} {
		c := r.CPU[label]
		parts = append(parts, fmt.Sprintf("%s %s ms (%s%% of a core)", label,
			f(float64(c.Microseconds())/1000, 0), f(100*c.Seconds()/r.Over.Seconds(), 2)))
	}
	return fmt.Sprintf("\nIdle CPU, both processes started and served nothing for %v (at 10 ms clock ticks): %s.\n",
		r.Over, strings.Join(parts, ", "))
}
