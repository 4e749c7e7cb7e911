package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var d []time.Duration
		for _, x := range xs {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	for i, tc := range []struct {
		sorted []time.Duration
		q      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.5, 7 * time.Millisecond},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.51, 3 * time.Millisecond},
		{ms(1, 2, 3, 4), 1, 4 * time.Millisecond},
		{hundred, 0.5, 50 * time.Millisecond},
		{hundred, 0.99, 99 * time.Millisecond},
		{hundred, 0.999, 100 * time.Millisecond},
	} {
		if got := percentile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("Test %d: percentile(%v, %v) = %v, want %v", i, tc.sorted, tc.q, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	for i, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{9, 1, 5}, 5},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		in := append([]float64(nil), tc.xs...)
		if got := median(tc.xs); got != tc.want {
			t.Errorf("Test %d: median(%v) = %v, want %v", i, tc.xs, got, tc.want)
		}
		for j := range in {
			if in[j] != tc.xs[j] {
				t.Errorf("Test %d: median reordered its input to %v", i, tc.xs)
			}
		}
	}
	if !math.IsNaN(ratio(1, 0)) {
		t.Errorf("ratio(1, 0) = %v, want NaN", ratio(1, 0))
	}
}
