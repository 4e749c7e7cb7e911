package billing

import "time"

// msPerMinute scales bucket levels: a level counts units × msPerMinute,
// so that a bucket refilling at limit units per minute gains exactly limit
// per millisecond, in integers.
const msPerMinute = 60_000

// maxRate bounds per-minute limits so that scaled levels fit an int64.
const maxRate = 1_000_000_000_000

// bucket is a token bucket for a per-minute limit: it holds up to limit
// units, refills at limit per minute, and may go below zero when a request
// turns out to use more tokens than estimated, which delays the next ones.
type bucket struct {
	level   int64 // units × msPerMinute
	last    time.Time
	started bool
}

// refill brings the bucket up to date at now; a new bucket starts full.
func (b *bucket) refill(now time.Time, limit int64) {
	capacity := limit * msPerMinute
	if !b.started {
		b.level, b.last, b.started = capacity, now, true
		return
	}
	el := now.Sub(b.last).Milliseconds()
	if el <= 0 {
		return
	}
	if el >= (capacity-b.level+limit-1)/limit {
		b.level, b.last = capacity, now
		return
	}
	b.level += el * limit
	// Keep the sub-millisecond rest of the elapsed time for the next refill.
	b.last = b.last.Add(time.Duration(el) * time.Millisecond)
}

// wait is how long until the bucket holds need units, zero if it does now.
func (b *bucket) wait(need, limit int64) time.Duration {
	deficit := need*msPerMinute - b.level
	if deficit <= 0 {
		return 0
	}
	return time.Duration((deficit+limit-1)/limit) * time.Millisecond
}

// give adds n units (negative to take them) to the bucket, up to its
// capacity.
func (b *bucket) give(n, limit int64) {
	b.level = min(limit*msPerMinute, b.level+n*msPerMinute)
}

// retryAfterSeconds rounds a wait up to whole seconds, at least one.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}
