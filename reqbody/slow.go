package reqbody

import (
	"io"
	"time"
)

// slowBodyAfter is how long a body may take to arrive before readFrom
// reads the rest of it in chunks (readSlow) instead of into a buffer grown
// eightfold toward its declared length. On loopback or a fast network a
// megabyte arrives in a few milliseconds and takes the eightfold path (few
// copies); a client that trickles its body (a slow link, or one of many
// clients holding connections open on purpose) takes this one.
const slowBodyAfter = 50 * time.Millisecond

// slowChunk is the size of the chunks of a slow body, a class's size.
const slowChunk = 4 << 10

// readSlow reads the rest of the body from rd, after the byte first that
// the full buffer had no room for, into chunks of slowChunk bytes charged
// to the budget, and at its end moves the whole body into one buffer of
// its size's class. While a body arrives it so holds at most one chunk
// more than what arrived beyond the buffer it filled, where growing the
// buffer could hold up to eight times what arrived, and it leaves no
// outgrown buffers behind for the collector: 2,000 clients that each
// trickle a body held 175 MiB with the eightfold buffers.
func (b *Body) readSlow(rd io.Reader, limit int64, first byte) error {
	chunkClass := classFor(slowChunk)
	var chunks []*[]byte
	defer func() {
		for _, c := range chunks {
			putBodyBuffer(c, chunkClass)
			b.budget.give(slowChunk)
		}
	}()
	n := 0 // bytes in chunks
	add := func() bool {
		if !b.budget.take(slowChunk) {
			return false
		}
		c, _ := getBodyBuffer(slowChunk)
		chunks = append(chunks, c)
		return true
	}
	if !add() {
		return errBudget
	}
	(*chunks[0])[0] = first
	n = 1
	for {
		if n == len(chunks)*slowChunk && !add() {
			return errBudget
		}
		c := *chunks[len(chunks)-1]
		k, err := rd.Read(c[n%slowChunk:])
		n += k
		if int64(b.n+n) > limit {
			return errTooLarge
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	total := b.n + n
	size := total
	if c := classFor(total); c != unpooled {
		size = classSize(c)
	}
	if !b.resize(size) {
		return errBudget
	}
	dst := (*b.buf)[b.n:total]
	for _, c := range chunks {
		dst = dst[copy(dst, *c):]
	}
	b.n = total
	return nil
}
