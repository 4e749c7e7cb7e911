package chatproxy

import "sync"

const (
	// bufSize is the size of the pooled read buffers.
	bufSize = 32 << 10
	// maxPooled is the largest buffer returned to the pool; larger ones,
	// grown for a big event or response, are left to the garbage collector
	// so that one large response does not pin memory for good.
	maxPooled = 64 << 10
)

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, bufSize)
	return &b
}}

// getBuf returns a pooled buffer of len bufSize.
func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

// putBuf returns b to the pool unless it grew too large.
func putBuf(b *[]byte) {
	if cap(*b) > maxPooled {
		return
	}
	*b = (*b)[:cap(*b)]
	bufPool.Put(b)
}
