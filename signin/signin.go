// Package signin throttles failed sign-ins: a password check costs CPU by
// design (bcrypt), so a client that keeps failing one must be stopped
// before it reaches the check again, without slowing the users who sign
// in. Limiter counts failures per client IP and per user name, each in a
// token bucket (golang.org/x/time/rate), and tells a request whose IP or
// user has spent its failures how long to wait.
package signin

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of a Limiter.
const (
	// DefaultPerIP is how many failed sign-ins a client IP may make per
	// DefaultWindow.
	DefaultPerIP = 10
	// DefaultPerUser is how many failed sign-ins one user name may get,
	// from any IP, per DefaultWindow.
	DefaultPerUser = 10
	// DefaultWindow is the period over which failures are counted.
	DefaultWindow = time.Minute
	// DefaultMaxTracked bounds the IPs and the user names tracked, each.
	DefaultMaxTracked = 1 << 16
)

// maxUserLen bounds the user name kept as a key.
const maxUserLen = 256

// Config sets a Limiter's limits; zero values take the defaults.
type Config struct {
	// PerIP is how many failures a client IP may make per Window.
	PerIP int
	// PerUser is how many failures a user name may get per Window.
	PerUser int
	// Window is the period over which failures are counted: a spent
	// bucket regains one failure every Window/PerIP (or /PerUser).
	Window time.Duration
	// MaxTracked bounds the IPs, and the user names, tracked at once.
	// When full, buckets that have refilled are dropped; a new IP or name
	// that still finds no room is not tracked (its other bucket still is).
	MaxTracked int
}

// Limiter counts failed sign-ins per IP and per user. It is safe for
// concurrent use.
type Limiter struct {
	ips, users buckets
}

// New returns a Limiter with c's limits.
func New(c Config) *Limiter {
	if c.PerIP <= 0 {
		c.PerIP = DefaultPerIP
	}
	if c.PerUser <= 0 {
		c.PerUser = DefaultPerUser
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.MaxTracked <= 0 {
		c.MaxTracked = DefaultMaxTracked
	}
	return &Limiter{
		ips:   newBuckets(c.PerIP, c.Window, c.MaxTracked),
		users: newBuckets(c.PerUser, c.Window, c.MaxTracked),
	}
}

// Wait is how long a sign-in from ip as user must wait before it may be
// checked, zero when it may be checked now. user "" (no credentials) is
// judged by its IP alone.
func (l *Limiter) Wait(ip, user string, now time.Time) time.Duration {
	return max(l.ips.wait(ip, now), l.users.wait(userKey(user), now))
}

// Failed counts a failed sign-in from ip as user.
func (l *Limiter) Failed(ip, user string, now time.Time) {
	l.ips.take(ip, now)
	l.users.take(userKey(user), now)
}

// userKey is the key of user's bucket, "" for none.
func userKey(user string) string {
	if len(user) > maxUserLen {
		return user[:maxUserLen]
	}
	return user
}

// buckets are the token buckets of one kind of key.
type buckets struct {
	mu    sync.Mutex
	limit rate.Limit
	burst int
	max   int
	m     map[string]*rate.Limiter
}

func newBuckets(n int, window time.Duration, maxTracked int) buckets {
	return buckets{limit: rate.Limit(float64(n) / window.Seconds()), burst: n, max: maxTracked, m: make(map[string]*rate.Limiter)}
}

// wait is how long key must wait for one failure to be allowed again.
func (b *buckets) wait(key string, now time.Time) time.Duration {
	if key == "" {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.m[key]
	if lim == nil {
		return 0
	}
	t := lim.TokensAt(now)
	if t >= 1 {
		return 0
	}
	return time.Duration((1 - t) / float64(b.limit) * float64(time.Second))
}

// take spends one of key's failures.
func (b *buckets) take(key string, now time.Time) {
	if key == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.m[key]
	if lim == nil {
		if len(b.m) >= b.max {
			b.prune(now)
		}
		if len(b.m) >= b.max {
			return
		}
		lim = rate.NewLimiter(b.limit, b.burst)
		b.m[key] = lim
	}
	// A bucket at 0 stays at 0: the failure that was let through anyway
	// (a race between two requests) is not owed later.
	if lim.TokensAt(now) >= 1 {
		lim.AllowN(now, 1)
	}
}

// prune drops the buckets that have refilled: they hold no failure.
func (b *buckets) prune(now time.Time) {
	for k, lim := range b.m {
		if lim.TokensAt(now) >= float64(b.burst) {
			delete(b.m, k)
		}
	}
}
