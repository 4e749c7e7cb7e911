package reqbody

import (
	"sort"
	"sync"
)

// Size classes of the buffers request bodies are read into, each with its
// own pool: powers of two from minBodyBuffer to 256 KiB, then four classes
// per doubling (1, 1.25, 1.5 and 1.75 times a power of two) up to
// maxPooledBody, so that a body declared just over a power of two (a
// "1 MiB" conversation of 1,050,000 bytes) takes at most a quarter more
// than it needs, not twice. Buffers grown for a body of unknown length
// double, from power of two to power of two. A body that outgrows the
// largest class (only when max_request_body is larger) gets unpooled
// buffers that grow by maxPooledBody at a time.
const (
	minBodyBuffer = 1 << 9  // 512 bytes
	fineFrom      = 1 << 18 // 256 KiB: the first class with quarter steps
	maxPooledBody = 1 << 24 // 16 MiB
	// numClasses is 10 powers of two from 512 bytes to 256 KiB, then 4
	// classes for each of the 6 doublings up to 16 MiB.
	numClasses = 10 + 6*4
)

// classSizes are the sizes of the classes, ascending.
var classSizes = func() []int {
	var s []int
	for n := minBodyBuffer; n < fineFrom; n *= 2 {
		s = append(s, n)
	}
	for n := fineFrom; n < maxPooledBody; n *= 2 {
		for q := range 4 {
			s = append(s, n+q*n/4)
		}
	}
	return append(s, maxPooledBody)
}()

// bodyPools holds the free buffers of each class. They hold *[]byte with
// len == cap == the class's size, so that Put does not allocate.
var bodyPools [numClasses]sync.Pool

// unpooled is the class of buffers larger than every class.
const unpooled = -1

// classFor returns the smallest class whose buffers hold n bytes, or
// unpooled.
func classFor(n int) int {
	c := sort.SearchInts(classSizes, n)
	if c == len(classSizes) {
		return unpooled
	}
	return c
}

// classSize returns the size of the buffers of class c.
func classSize(c int) int { return classSizes[c] }

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
	b := make([]byte, classSize(c))
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
