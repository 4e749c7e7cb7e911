// Package tapcore is what the dialects' usage taps (dialect.Tap) share: the
// state every tap keeps of an answer, the reading of SSE data fields, the
// estimate of an answer that reports no usage, and the helpers that read
// usage objects safely. Each dialect's tap embeds Core and adds what its
// protocol's events need.
package tapcore

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// Normalize converts a usage object of a protocol into billing.Usage.
type Normalize func([]byte) (billing.Usage, error)

// Core is the state of one answer's tap that every protocol keeps.
type Core struct {
	// Strip removes the usage the gateway injected from a stream.
	Strip bool
	// MaxDepth bounds the nesting of the JSON the tap reads; zero means
	// jsonlimit.DefaultMaxDepth.
	MaxDepth int
	// Meta, when set, collects the answer's model and finish reasons.
	Meta *dialect.Meta
	// Usage is the usage reported so far.
	Usage billing.Usage
	// Container is set when an answer names the code execution container
	// it used (one code session).
	Container bool
	// ServiceTier is the service tier the response reported.
	ServiceTier string
	// Reported is set once the complete usage has been reported.
	Reported bool
	// Started is set when the stream's start reported the prompt.
	Started bool
	// OutBytes counts the delivered output text (see Estimate).
	OutBytes int64
	// UpstreamErr is set when the answer carried an error event.
	UpstreamErr bool
	// Term is set by the stream's final event.
	Term bool
	// RespID and RespStatus are a Responses answer's id and last status.
	RespID, RespStatus string
	// Scratch joins multi-line data fields.
	Scratch []byte
}

// Reset readies c for a new answer. Its scratch buffer is not kept: what
// a tap reads of a joined payload (a service tier) may alias it.
func (c *Core) Reset(cfg dialect.TapConfig) {
	*c = Core{Strip: cfg.Strip, MaxDepth: cfg.MaxDepth, Meta: cfg.Meta}
}

// Depth is the nesting limit of the JSON the tap reads.
func (c *Core) Depth() int { return jsonlimit.OrDefault(c.MaxDepth) }

// Terminal reports the stream's final event (dialect.Tap).
func (c *Core) Terminal() bool { return c.Term }

// UpstreamError reports the upstream's error event (dialect.Tap).
func (c *Core) UpstreamError() bool { return c.UpstreamErr }

// Ended reports whether the stream has ended: its final event or an error
// event of the upstream, after which nothing more is forwarded.
func (c *Core) Ended() bool { return c.Term || c.UpstreamErr }

// SetOutBytes sets the output size of a body too large to hold
// (dialect.Tap).
func (c *Core) SetOutBytes(n int64) { c.OutBytes = n }

// Piece counts a piece of an event too large to hold as output
// (dialect.Tap).
func (c *Core) Piece(p []byte) { c.OutBytes += int64(len(p)) }

// Large does nothing: most protocols read nothing from the bytes of a
// body too large to hold but its tail (dialect.Tap).
func (c *Core) Large([]byte, bool) {}

// Payload locates the data of the whole SSE event ev: ev[a:b], or, when
// the event has several data lines (multi), their join in c.Scratch. ok is
// false when ev has no data line.
func (c *Core) Payload(ev []byte) (payload []byte, a int, multi, ok bool) {
	a, b, multi := DataField(ev)
	if a < 0 {
		return nil, a, false, false
	}
	payload = ev[a:b]
	if multi {
		c.Scratch = JoinData(c.Scratch[:0], ev)
		payload = c.Scratch
	}
	return payload, a, multi, true
}

// UsageFrom records a response's usage object, read by norm.
func (c *Core) UsageFrom(u gjson.Result, norm Normalize) {
	if !u.IsObject() {
		return
	}
	if nu, err := norm(RawBytes(u)); err == nil {
		c.Usage, c.Reported = nu, true
	}
}

// TailUsage finds the usage object in the last bytes of a response too
// large to keep whole: the last `"usage"` key, parsed as if it opened an
// object. A non-object value there is ignored.
func (c *Core) TailUsage(tail []byte, norm Normalize) {
	i := bytes.LastIndex(tail, []byte(`"usage"`))
	if i < 0 {
		return
	}
	doc := append([]byte{'{'}, tail[i:]...)
	c.UsageFrom(gjson.Get(Str(doc), "usage"), norm)
}

// Result returns the answer's usage, reported or estimated, and how it
// was obtained, with the code session of a container the answer named.
func (c *Core) Result(promptBytes int, cut, gone bool) dialect.TapResult {
	u, src := c.Tokens(promptBytes, cut, gone)
	return c.Finish(u, src)
}

// Finish completes a result of u obtained as src: the code session of a
// container the answer named, and what else the tap read.
func (c *Core) Finish(u billing.Usage, src billing.Source) dialect.TapResult {
	if c.Container {
		u.CodeSessions = max(u.CodeSessions, 1)
	}
	return dialect.TapResult{Usage: u, Source: src, ServiceTier: c.ServiceTier, ResponseID: c.RespID, ResponseStatus: c.RespStatus}
}

// Tokens returns the answer's token usage, reported or estimated, and how
// it was obtained. cut means the response ended early (client gone,
// timeout, upstream failure); gone means the client left.
func (c *Core) Tokens(promptBytes int, cut, gone bool) (billing.Usage, billing.Source) {
	src := billing.SourceEstimated
	if cut || gone {
		src = billing.SourcePartial
	}
	switch {
	case c.Reported:
		if !gone {
			src = billing.SourceReported
		}
		return c.Usage, src
	case c.Started:
		u := c.Usage
		u.Output = max(u.Output, dialect.EstimateTokens(c.OutBytes))
		if u.Input == 0 && u.CacheRead == 0 && u.CacheCreation == 0 {
			// A start that reported no input: a cloud's stream transcoded
			// into Messages (Bedrock, Gemini), whose usage comes only at
			// its end. Its prompt was read all the same.
			u.Input = dialect.EstimateTokens(int64(promptBytes))
		}
		return u, src
	}
	return dialect.Estimate(int64(promptBytes), c.OutBytes), src
}

// State returns c itself: tests of the dialects' taps read a tap's state
// through it.
func (c *Core) State() *Core { return c }
