package mockprovider

import (
	"strconv"
	"sync"

	"github.com/caddy-air/caddy-air/dialect"
)

// appendString appends s to b as a JSON string literal, quotes included
// (dialect.AppendString: invalid UTF-8 becomes U+FFFD, as encoding/json
// does).
func appendString(b []byte, s string) []byte { return dialect.AppendString(b, s) }

// appendInt appends n in decimal.
func appendInt(b []byte, n int64) []byte {
	return strconv.AppendInt(b, n, 10)
}

// bufPool holds byte slices reused to build response bodies and events.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 2048)
	return &b
}}

// getBuf returns an empty pooled buffer.
func getBuf() *[]byte {
	b := bufPool.Get().(*[]byte)
	*b = (*b)[:0]
	return b
}

// putBuf returns b to the pool unless it grew very large.
func putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return
	}
	bufPool.Put(b)
}
