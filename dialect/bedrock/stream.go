package bedrock

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/internal/jsonview"
)

// maxBlocks bounds the content block indexes a stream may use.
const maxBlocks = 4096

// NewStreamDecoder returns a decoder of one ConverseStream answer.
func (Codec) NewStreamDecoder() dialect.StreamDecoder { return &streamDecoder{} }

// streamDecoder turns ConverseStream frames into neutral events. A frame
// may yield several events (a text delta that opens its block yields a
// block start first), queued in pend. Text of an event views buf, which
// is compacted only when Next finds no complete frame: the event before
// is then no longer in use.
type streamDecoder struct {
	buf     []byte
	off     int // start of the bytes not yet decoded
	f       frame
	scratch []byte // unescaped text

	pend        [3]dialect.Event
	npend, ipos int

	started, stopped, metadata, done bool
	// blocks maps a Bedrock contentBlockIndex to its neutral index + 1,
	// negated once the block stopped; 0 is a block not yet started.
	blocks    []int32
	nblocks   int32
	stop      dialect.StopReason
	stopSeq   string
	usage     billing.Usage
	haveUsage bool
}

// Feed adds the next bytes of the stream.
func (d *streamDecoder) Feed(p []byte) { d.buf = append(d.buf, p...) }

// Next yields the next event.
func (d *streamDecoder) Next(ev *dialect.Event) bool {
	for {
		if d.ipos < d.npend {
			*ev = d.pend[d.ipos]
			d.ipos++
			return true
		}
		d.npend, d.ipos = 0, 0
		if d.done {
			return false
		}
		rest := d.buf[d.off:]
		n, err := frameLen(rest)
		if err == nil && (n == 0 || len(rest) < n) {
			d.buf = d.buf[:copy(d.buf, rest)]
			d.off = 0
			return false
		}
		if err == nil {
			err = parseFrame(rest[:n], &d.f)
			d.off += n
		}
		if err != nil {
			d.fail(malformed(err.Error()))
			continue
		}
		d.handle()
	}
}

// End reports a stream that ended before its final event.
func (d *streamDecoder) End(ev *dialect.Event) bool {
	if d.done {
		return false
	}
	d.done = true
	msg := "bedrock stream ended before its last event"
	if len(d.buf) > d.off {
		msg = "bedrock stream ended inside an event"
	}
	*ev = dialect.Event{Kind: dialect.EventError, Err: &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrCut, Message: msg}}
	return true
}

// push queues an event and returns it for its fields to be set.
func (d *streamDecoder) push(kind dialect.EventKind) *dialect.Event {
	ev := &d.pend[d.npend]
	*ev = dialect.Event{Kind: kind}
	d.npend++
	return ev
}

// fail queues an error event that ends the stream.
func (d *streamDecoder) fail(e *dialect.Error) {
	d.npend, d.ipos = 0, 0
	d.push(dialect.EventError).Err = e
	d.done = true
}

// handle queues the events of the frame in d.f.
func (d *streamDecoder) handle() {
	f := &d.f
	switch string(f.messageType) {
	case "event":
	case "exception":
		e := exceptionError(string(f.exceptionType), strings.Clone(gjson.Get(jsonview.String(f.payload), "message").Str))
		if e.Kind == "" {
			e.Status, e.Kind = http.StatusBadGateway, dialect.ErrServer
		}
		d.fail(e)
		return
	case "error":
		d.fail(&dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer, Message: scrub(string(f.errorCode) + ": " + string(f.errorMessage))})
		return
	default:
		d.fail(malformed("event stream frame of an unknown message type"))
		return
	}
	p := jsonview.String(f.payload)
	if !gjson.Valid(p) {
		d.fail(malformed("event " + string(f.eventType) + " is not valid JSON"))
		return
	}
	if !d.started {
		d.started = true
		d.push(dialect.EventStart)
		if string(f.eventType) == "messageStart" {
			return
		}
	}
	switch string(f.eventType) {
	case "contentBlockStart":
		d.blockStart(p)
	case "contentBlockDelta":
		d.delta(p)
	case "contentBlockStop":
		if i, ok := d.index(p); ok && d.blocks[i] > 0 {
			d.push(dialect.EventBlockStop).Index = int(d.blocks[i] - 1)
			d.blocks[i] = -d.blocks[i]
		}
	case "messageStop":
		d.stopped = true
		d.stop = stopReason(gjson.Get(p, "stopReason").Str)
		if d.stop == dialect.StopSequence {
			d.stopSeq = strings.Clone(gjson.Get(p, "additionalModelResponseFields.stop_sequence").Str)
		}
		d.finish()
	case "metadata":
		d.metadata = true
		if u := gjson.Get(p, "usage"); u.Exists() {
			d.haveUsage = true
			d.usage = billing.Usage{
				Input:         u.Get("inputTokens").Int(),
				Output:        u.Get("outputTokens").Int(),
				CacheRead:     u.Get("cacheReadInputTokens").Int(),
				CacheCreation: u.Get("cacheWriteInputTokens").Int(),
			}.Bounded()
		}
		d.finish()
	}
}

// finish queues the stop once both messageStop and metadata (which
// carries the usage and comes after it) arrived.
func (d *streamDecoder) finish() {
	if !d.stopped || !d.metadata {
		return
	}
	ev := d.push(dialect.EventStop)
	ev.StopReason, ev.StopSequence = d.stop, d.stopSeq
	ev.Usage, ev.HasUsage = d.usage, d.haveUsage
	d.done = true
}

// index reads the frame's contentBlockIndex, growing the block map; a
// missing or out-of-range index fails the stream.
func (d *streamDecoder) index(p string) (int, bool) {
	r := gjson.Get(p, "contentBlockIndex")
	i := r.Int()
	if r.Type != gjson.Number || i < 0 || i >= maxBlocks {
		d.fail(malformed("event has no valid contentBlockIndex"))
		return 0, false
	}
	for int(i) >= len(d.blocks) {
		d.blocks = append(d.blocks, 0)
	}
	return int(i), true
}

// open queues the start of block i (a Bedrock index) of kind, unless it
// started already, and returns its neutral index.
func (d *streamDecoder) open(i int, kind dialect.BlockKind) (int, *dialect.Event) {
	if s := d.blocks[i]; s != 0 {
		if s < 0 {
			s = -s
		}
		return int(s - 1), nil
	}
	d.nblocks++
	d.blocks[i] = d.nblocks
	ev := d.push(dialect.EventBlockStart)
	ev.Index, ev.Block.Kind = int(d.nblocks-1), kind
	return ev.Index, ev
}

// blockStart queues an explicit block start: Converse sends one for a
// tool use only.
func (d *streamDecoder) blockStart(p string) {
	i, ok := d.index(p)
	if !ok {
		return
	}
	tu := gjson.Get(p, "start.toolUse")
	if !tu.Exists() {
		d.open(i, dialect.BlockText)
		return
	}
	if _, ev := d.open(i, dialect.BlockToolUse); ev != nil {
		ev.Block.ToolID = strings.Clone(tu.Get("toolUseId").Str)
		ev.Block.ToolName = strings.Clone(tu.Get("name").Str)
	}
}

// delta queues a content delta, after its block's start if the delta
// opens the block (text and reasoning blocks have no start event).
func (d *streamDecoder) delta(p string) {
	i, ok := d.index(p)
	if !ok {
		return
	}
	// Values are read raw (jsonview.Member): a gjson lookup of a string
	// with escapes would allocate its unescaped copy.
	delta := gjson.Get(p, "delta").Raw
	var kind dialect.BlockKind
	var dk dialect.DeltaKind
	var val string
	var ok2 bool
	if val, ok2 = jsonview.Member(delta, "text"); ok2 {
		kind, dk = dialect.BlockText, dialect.DeltaText
	} else if tu, ok := jsonview.Member(delta, "toolUse"); ok {
		if val, ok2 = jsonview.Member(tu, "input"); ok2 {
			kind, dk = dialect.BlockToolUse, dialect.DeltaJSON
		}
	} else if rc, ok := jsonview.Member(delta, "reasoningContent"); ok {
		kind = dialect.BlockThinking
		if val, ok2 = jsonview.Member(rc, "text"); ok2 {
			dk = dialect.DeltaThinking
		} else if val, ok2 = jsonview.Member(rc, "signature"); ok2 {
			dk = dialect.DeltaSignature
		} else if red, ok := jsonview.Member(rc, "redactedContent"); ok {
			if _, ev := d.open(i, dialect.BlockRedactedThinking); ev != nil {
				ev.Block.Data = strings.Clone(gjson.Parse(red).Str)
			}
			return
		}
	}
	if dk == 0 {
		return // a delta of a kind this dialect does not carry (citations)
	}
	idx, _ := d.open(i, kind)
	ev := d.push(dialect.EventDelta)
	ev.Index, ev.Delta = idx, dk
	ev.Text, d.scratch = jsonview.Text(d.scratch, val)
}
