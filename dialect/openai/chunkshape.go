package openai

import "bytes"

// The chunks of a stream differ in little more than their text: with usage
// asked for upstream, a content chunk is
//
//	{"id":…,"choices":[{"index":0,"delta":{"content":"<TEXT>"},"logprobs":null,"finish_reason":null}],"usage":null}
//
// and only <TEXT> changes from one to the next. After a chunk scanned whole,
// the tap keeps its shape: its bytes up to the opening quote of its last
// text string (the lead), its bytes after the string's closing quote (the
// tail), and what the scan found apart from the text. A next chunk that
// begins with the lead, ends with the tail, and has one string from that
// quote to the tail scans as the shape's chunk did, which the tap then
// knows without scanning: one comparison of the bytes (a memcmp) and one
// pass over the text, instead of a walk through the whole chunk.
//
// Why the two scans agree, ok included. scanChunk reads forward, never
// back, and whatever it decides at a byte depends only on the bytes read
// so far, on the room the path to it leaves, and on whether an index has
// reached len(payload):
//
//   - Up to the text. Before it calls textEnd at the opening quote, the scan
//     of the shape's chunk read no byte past that quote (every value before
//     ended before it, and skipSpace stopped on the quote itself), and found
//     every index it compared with the length below it. The new chunk has
//     the same bytes there and is longer than the lead, so its scan takes
//     the same steps, with the same room, to the same textEnd call.
//   - The text. There valueEnd is stringEnd from the quote, which the match
//     has run: it ends where the tail begins. The text adds its raw length
//     to outBytes and becomes the last text; nothing else depends on what
//     it holds.
//   - The tail. The scan goes on from the tail's first byte in the same
//     state, over the same bytes, with every index and the length shifted
//     by the same amount: it takes the same steps again, finds the usage
//     member at the same distance from the end, and ends as the shape's
//     chunk's scan did, with ok set and nothing after the object.
//
// So a chunk that matches a shape scans, and a chunk too deep or malformed
// (which does not scan) can never match one: a shape is learnt only from a
// chunk that scanned, and at the same limit (chunkShape.maxDepth). What
// the scan finds is what it found in the shape's chunk (choicesAt, choices,
// hasError, the sizes of the other texts), but for the text's size and
// place, which the match knows, and the usage's place: the same when the
// usage is in the lead (a "choices" member repeated after it), as far from
// the end when it is in the tail. TestChunkShape and FuzzChunkShape check
// all this against full scans.

// maxShape bounds the chunk a tap learns a shape from, so the bytes it keeps.
const maxShape = 4 << 10

// chunkShape is the shape of a chunk around its last text string.
type chunkShape struct {
	// buf holds the lead, up to the text's opening quote included, then the
	// tail, from past its closing quote to the end of the chunk.
	buf []byte
	// lead is the length of the lead in buf; zero when no shape is known.
	lead int
	// maxDepth is the limit the shape's chunk was scanned at.
	maxDepth int
	// usageAt and usageEnd are info's usage counted back from the end of
	// the chunk, when the usage is in the tail.
	usageAt, usageEnd int
	// usageInTail is set when the chunk's usage comes after its text.
	usageInTail bool
	// info is the scan of the shape's chunk, without its text's size in
	// outBytes; its positions past the text are meaningless.
	info chunkInfo
}

// learn keeps the shape of payload, of which c is the scan at maxDepth,
// when it has one: a text string, in a payload of at most maxShape bytes.
// Otherwise the shape known so far stays.
func (s *chunkShape) learn(payload []byte, c chunkInfo, maxDepth int) {
	if c.textEnd == 0 || len(payload) > maxShape {
		return
	}
	s.buf = append(append(s.buf[:0], payload[:c.textAt+1]...), payload[c.textEnd:]...)
	s.lead = c.textAt + 1
	s.maxDepth = maxDepth
	s.usageInTail = c.usageAt > c.textAt // then past textEnd: usage is another member than choices
	if s.usageInTail {
		s.usageAt, s.usageEnd = len(payload)-c.usageAt, len(payload)-c.usageEnd
	}
	c.outBytes -= c.textEnd - c.textAt - 2
	s.info = c
}

// match returns what scanChunk(payload, 0, maxDepth) returns when payload
// has the shape s: ok is false when it has not (or s is empty), and then
// payload may still scan.
func (s *chunkShape) match(payload []byte, maxDepth int) (info chunkInfo, ok bool) {
	tail := s.buf[s.lead:]
	if s.lead == 0 || maxDepth != s.maxDepth || len(payload) <= len(s.buf) ||
		!bytes.HasPrefix(payload, s.buf[:s.lead]) || !bytes.HasSuffix(payload, tail) {
		return chunkInfo{}, false
	}
	at, e := s.lead-1, len(payload)-len(tail)
	if stringEnd(payload, at) != e {
		return chunkInfo{}, false
	}
	info = s.info
	info.outBytes += e - at - 2
	info.textAt, info.textEnd = at, e
	if s.usageInTail {
		info.usageAt, info.usageEnd = len(payload)-s.usageAt, len(payload)-s.usageEnd
	}
	return info, true
}
