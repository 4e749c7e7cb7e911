// Package reqlog keeps, when an operator switches it on for a key or a
// team, the bodies of requests and responses: captured up to a size cap
// (then marked truncated, never buffered further), streams reassembled
// into their final text, credentials and configured patterns redacted.
// It is off by default: a nil *Capture costs a nil check.
package reqlog

import (
	"regexp"
)

// Capture copies up to Cap bytes of a body written to it, then stops
// copying and marks itself truncated. It never fails a write: the body's
// reader or writer goes on whatever it holds.
type Capture struct {
	// Cap is the most bytes kept.
	Cap int
	buf []byte
	// Truncated is set once a write went past Cap.
	Truncated bool
}

// NewCapture returns a capture of at most capBytes bytes.
func NewCapture(capBytes int) *Capture { return &Capture{Cap: capBytes} }

// Write implements io.Writer; it always reports len(p) written.
func (c *Capture) Write(p []byte) (int, error) {
	if c == nil {
		return len(p), nil
	}
	room := c.Cap - len(c.buf)
	if room <= 0 {
		if len(p) > 0 {
			c.Truncated = true
		}
		return len(p), nil
	}
	if len(p) > room {
		c.buf = append(c.buf, p[:room]...)
		c.Truncated = true
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	return len(p), nil
}

// Bytes returns what was captured.
func (c *Capture) Bytes() []byte {
	if c == nil {
		return nil
	}
	return c.buf
}

// Redactor replaces credentials in captured bodies.
type Redactor struct {
	patterns []*regexp.Regexp
}

// Redacted replaces what a Redactor removes.
const Redacted = "[redacted]"

// builtin are the patterns always redacted: API keys of the usual shapes
// (sk-…, including caddy-air's sk-air-…) and bearer tokens.
var builtin = []*regexp.Regexp{
	regexp.MustCompile(`sk-[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`(?i)bearer\s+[A-Za-z0-9._~+/\-]{8,}=*`),
}

// NewRedactor returns a redactor of the built-in patterns and of extra,
// regular expressions in Go's syntax.
func NewRedactor(extra ...string) (*Redactor, error) {
	r := &Redactor{patterns: append([]*regexp.Regexp(nil), builtin...)}
	for _, e := range extra {
		re, err := regexp.Compile(e)
		if err != nil {
			return nil, err
		}
		r.patterns = append(r.patterns, re)
	}
	return r, nil
}

// Redact returns b with every match of r's patterns replaced.
func (r *Redactor) Redact(b []byte) []byte {
	for _, re := range r.patterns {
		b = re.ReplaceAll(b, []byte(Redacted))
	}
	return b
}
