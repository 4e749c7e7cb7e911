package gemini

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/jsonview"
)

// maxEvent bounds one SSE event, so that a stream without blank lines
// cannot grow the buffer without end.
const maxEvent = 32 << 20

// NewStreamDecoder returns a decoder of one streamGenerateContent?alt=sse
// answer.
func (Codec) NewStreamDecoder() dialect.StreamDecoder { return &streamDecoder{} }

// streamDecoder turns SSE chunks, each a whole GenerateContentResponse
// with the next parts, into neutral events. A chunk yields several
// events, queued in q; their Text views buf or arena, both kept until
// the queue is drained.
type streamDecoder struct {
	buf   []byte
	off   int    // start of the bytes not yet decoded
	data  []byte // a multi-line event's data, joined
	arena []byte // unescaped texts of the queued events
	q     []dialect.Event
	qpos  int

	started, done bool
	// finished is set by the chunk with the finish reason, whose stop
	// reason is stop; the stop is yielded at the stream's end (End), as
	// usageMetadata may come in later chunks.
	finished   bool
	stop       dialect.StopReason
	responseID string
	cur        dialect.BlockKind // kind of the open block, 0 if none
	nblocks    int
	calls      int
	usage      billing.Usage
	haveUsage  bool
}

// Feed adds the next bytes of the stream.
func (d *streamDecoder) Feed(p []byte) { d.buf = append(d.buf, p...) }

// Next yields the next event.
func (d *streamDecoder) Next(ev *dialect.Event) bool {
	for {
		if d.qpos < len(d.q) {
			*ev = d.q[d.qpos]
			d.qpos++
			return true
		}
		d.q, d.qpos, d.arena = d.q[:0], 0, d.arena[:0]
		if d.done {
			return false
		}
		data, ok := d.nextEvent()
		if !ok {
			rest := d.buf[d.off:]
			if len(rest) > maxEvent {
				d.fail(malformed("an SSE event exceeds 32 MiB"))
				continue
			}
			d.buf, d.off = d.buf[:copy(d.buf, rest)], 0
			return false
		}
		if len(data) > 0 {
			d.handle(jsonview.String(data))
		}
	}
}

// nextEvent consumes the next complete SSE event and returns its data,
// or false if the buffer holds no complete event.
func (d *streamDecoder) nextEvent() ([]byte, bool) {
	rest := d.buf[d.off:]
	var data []byte
	lines := 0
	for i := 0; ; {
		nl := bytes.IndexByte(rest[i:], '\n')
		if nl < 0 {
			return nil, false
		}
		line := bytes.TrimSuffix(rest[i:i+nl], []byte{'\r'})
		i += nl + 1
		if len(line) == 0 {
			d.off += i
			return data, true
		}
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // event:, id:, retry: and comments
		}
		v = bytes.TrimPrefix(v, []byte{' '})
		if lines++; lines == 1 {
			data = v
			continue
		}
		if lines == 2 {
			d.data = append(d.data[:0], data...)
		}
		d.data = append(append(d.data, '\n'), v...)
		data = d.data
	}
}

// End yields the stream's stop, with the last usage reported, when a
// chunk had a finish reason: a Gemini stream has no final event, and
// the usage may come after the finish reason, in a chunk of its own
// (Vertex AI's last chunk may carry only usageMetadata). Without a finish
// reason, or with an event left incomplete, the stream was cut.
func (d *streamDecoder) End(ev *dialect.Event) bool {
	if d.done {
		return false
	}
	d.done = true
	cut := len(bytes.TrimSpace(d.buf[d.off:])) > 0
	if d.finished && !cut {
		*ev = dialect.Event{Kind: dialect.EventStop, StopReason: d.stop, Usage: d.usage, HasUsage: d.haveUsage}
		return true
	}
	msg := "gemini stream ended before its last chunk"
	if cut {
		msg = "gemini stream ended inside an event"
	}
	*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrCut, Message: msg}}
	return true
}

// push queues an event and returns it for its fields to be set; the
// pointer is valid until the next push.
func (d *streamDecoder) push(kind dialect.EventKind, index int) *dialect.Event {
	d.q = append(d.q, dialect.Event{Kind: kind, Index: index})
	return &d.q[len(d.q)-1]
}

// fail replaces the queue with an error that ends the stream.
func (d *streamDecoder) fail(e *dialect.Error) {
	d.q, d.qpos = d.q[:0], 0
	d.push(dialect.EventError, 0).Err = e
	d.done = true
}

// handle queues the events of one chunk. After the chunk with the
// finish reason only usage and errors are read: the answer is complete.
func (d *streamDecoder) handle(chunk string) {
	if !gjson.Valid(chunk) {
		d.fail(malformed("a stream chunk is not valid JSON"))
		return
	}
	if e := gjson.Get(chunk, "error"); e.Exists() {
		d.fail(googleError(0, e))
		return
	}
	if !d.started {
		d.started = true
		d.responseID = strings.Clone(gjson.Get(chunk, "responseId").Str)
		ev := d.push(dialect.EventStart, 0)
		ev.ID, ev.Model = d.responseID, strings.Clone(gjson.Get(chunk, "modelVersion").Str)
	}
	if u := gjson.Get(chunk, "usageMetadata"); u.Exists() {
		d.haveUsage = true
		um := usageMetadata{
			PromptTokenCount:        u.Get("promptTokenCount").Int(),
			CandidatesTokenCount:    u.Get("candidatesTokenCount").Int(),
			CachedContentTokenCount: u.Get("cachedContentTokenCount").Int(),
			ThoughtsTokenCount:      u.Get("thoughtsTokenCount").Int(),
			ToolUsePromptTokenCount: u.Get("toolUsePromptTokenCount").Int(),
		}
		d.usage = um.Usage()
	}
	if d.finished {
		return
	}
	cand := gjson.Get(chunk, "candidates.0")
	gjson.Get(cand.Raw, "content.parts").ForEach(func(_, p gjson.Result) bool {
		d.part(p.Raw)
		return !d.done
	})
	fr := gjson.Get(cand.Raw, "finishReason").Str
	if fr == "" && !cand.Exists() && gjson.Get(chunk, "promptFeedback.blockReason").Str != "" {
		fr = "SAFETY"
	}
	if fr == "" || d.done {
		return
	}
	d.closeBlock()
	d.stop, d.finished = finishReason(fr, d.calls > 0), true
}

// openBlock makes a block of kind the open one, closing another.
func (d *streamDecoder) openBlock(kind dialect.BlockKind) (int, *dialect.Event) {
	if d.cur == kind {
		return d.nblocks - 1, nil
	}
	d.closeBlock()
	d.cur = kind
	d.nblocks++
	ev := d.push(dialect.EventBlockStart, d.nblocks-1)
	ev.Block.Kind = kind
	return d.nblocks - 1, ev
}

// closeBlock stops the open block, if any.
func (d *streamDecoder) closeBlock() {
	if d.cur != 0 {
		d.push(dialect.EventBlockStop, d.nblocks-1)
		d.cur = 0
	}
}

// delta queues a delta of raw, a JSON string, to block i.
func (d *streamDecoder) delta(i int, kind dialect.DeltaKind, raw string) {
	ev := d.push(dialect.EventDelta, i)
	ev.Delta = kind
	ev.Text, d.arena = jsonview.AppendText(d.arena, raw)
}

// part queues the events of one part. Values are read raw: a gjson
// lookup of a string with escapes would allocate its unescaped copy.
func (d *streamDecoder) part(p string) {
	sig, hasSig := jsonview.Member(p, "thoughtSignature")
	if fc, ok := jsonview.Member(p, "functionCall"); ok {
		d.call(fc, sig)
		return
	}
	text, hasText := jsonview.Member(p, "text")
	if th, _ := jsonview.Member(p, "thought"); th == "true" {
		i, _ := d.openBlock(dialect.BlockThinking)
		if hasText && len(text) > 2 {
			d.delta(i, dialect.DeltaThinking, text)
		}
		if hasSig {
			d.delta(i, dialect.DeltaSignature, sig)
		}
		return
	}
	if hasSig {
		// A signature on a text part: a thinking block of its own, or the
		// end of the open one.
		i, _ := d.openBlock(dialect.BlockThinking)
		d.delta(i, dialect.DeltaSignature, sig)
	}
	if hasText && len(text) > 2 {
		i, _ := d.openBlock(dialect.BlockText)
		d.delta(i, dialect.DeltaText, text)
	}
}

// call queues a function call: Gemini sends each whole, so it is a block
// start, one delta with all its arguments, and a block stop.
func (d *streamDecoder) call(fc, sig string) {
	f := gjson.Parse(fc)
	name := f.Get("name").Str
	args, ok := jsonview.Member(fc, "args")
	if !ok {
		args = "{}"
	}
	id := f.Get("id").Str
	if id == "" {
		id = ToolID(d.responseID, d.calls, name, jsonview.Bytes(args))
	} else {
		id = strings.Clone(id)
	}
	d.calls++
	// The open block is never a call (each is closed at once), so this
	// starts a new one.
	i, ev := d.openBlock(dialect.BlockToolUse)
	ev.Block.ToolName = strings.Clone(name)
	if sig != "" {
		ev.Block.Signature = strings.Clone(gjson.Parse(sig).Str)
	}
	ev.Block.ToolID = WithSignature(id, ev.Block.Signature)
	d.push(dialect.EventDelta, i).Delta = dialect.DeltaJSON
	d.q[len(d.q)-1].Text = jsonview.Bytes(args)
	d.closeBlock()
}
