package routing

import (
	"bytes"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxRetryAfter bounds a Retry-After taken from an upstream.
const maxRetryAfter = time.Hour

// ParseRetryAfter reads a Retry-After header, in seconds or as an HTTP
// date relative to now, capped at one hour; 0 when absent, malformed
// (NaN, infinite) or in the past.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		switch {
		case math.IsNaN(n) || math.IsInf(n, 0):
			return 0
		case n >= maxRetryAfter.Seconds():
			// Compared before converting: a huge count of seconds
			// overflows a Duration.
			return maxRetryAfter
		}
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// quotaMarks are what an error body says when a key's quota or credit is
// spent (OpenAI's insufficient_quota, and the wording of others).
var quotaMarks = [][]byte{[]byte("insufficient_quota"), []byte("quota exceeded"), []byte("exceeded your current quota"),
	[]byte("credit balance is too low")}

// QuotaError reports whether an error body says the key's quota is spent.
func QuotaError(body []byte) bool {
	for _, m := range quotaMarks {
		if bytes.Contains(body, m) {
			return true
		}
	}
	return false
}
