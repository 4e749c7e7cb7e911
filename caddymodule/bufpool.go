package caddymodule

import (
	"math/bits"
	"sync"
)

// Size classes of the buffers request bodies are read into: powers of two
// from minBodyBuffer to maxPooledBody, each with its own pool. A body that
// outgrows the largest class (only when max_request_body is larger) gets
// unpooled buffers that grow by maxPooledBody at a time.
const (
	minBodyShift  = 12 // 4 KiB
	maxBodyShift  = 24 // 16 MiB
	minBodyBuffer = 1 << minBodyShift
	maxPooledBody = 1 << maxBodyShift
)

// bodyPools holds the free buffers of each class. They hold *[]byte with
// len == cap == the class's size, so that Put does not allocate.
var bodyPools [maxBodyShift - minBodyShift + 1]sync.Pool

// unpooled is the class of buffers larger than every class.
const unpooled = -1

// classFor returns the smallest class whose buffers hold n bytes, or
// unpooled.
func classFor(n int) int {
	if n <= minBodyBuffer {
		return 0
	}
	c := bits.Len(uint(n-1)) - minBodyShift
	if c >= len(bodyPools) {
		return unpooled
	}
	return c
}

// nextSize is the capacity a full buffer of size n grows to.
func nextSize(n int) int {
	if n < maxPooledBody {
		return 2 * n
	}
	return n + maxPooledBody
}

// getBodyBuffer returns a buffer of at least n bytes (exactly n when n is
// the size of a class) and its class.
func getBodyBuffer(n int) (*[]byte, int) {
	c := classFor(n)
	if c == unpooled {
		b := make([]byte, n)
		return &b, c
	}
	if p, _ := bodyPools[c].Get().(*[]byte); p != nil {
		bufferGot(c)
		return p, c
	}
	b := make([]byte, 1<<(c+minBodyShift))
	bufferGot(c)
	return &b, c
}

// putBodyBuffer returns p, got from getBodyBuffer with class c, to its
// pool. p must not be used afterwards.
func putBodyBuffer(p *[]byte, c int) {
	if c == unpooled {
		return
	}
	bufferPut(c)
	bodyPools[c].Put(p)
}

// bufferGot and bufferPut are told of every pooled buffer taken and
// returned; tests count them.
var (
	bufferGot = func(int) {}
	bufferPut = func(int) {}
)
