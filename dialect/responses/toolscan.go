package responses

import (
	"bytes"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/internal/tapcore"
)

// toolScan counts the tool call items of a Responses answer too large to
// hold (an image_generation_call carries its image, so such answers are
// often larger than maxHeld), from its bytes as they pass: each
// "type":"<kind>" member of a built-in tool's call counts one call, and
// the distinct "container_id" values are the code sessions (at least one
// when there is a code_interpreter_call). A JSON string cannot hold such a
// member unescaped, so text that quotes one is not counted. The bytes are
// scanned through a window that keeps the last scanKeep bytes of the
// previous piece, so that a member split between two reads is seen once.
type toolScan struct {
	used       bool
	win        []byte
	calls      billing.Usage
	codeItems  int64
	containers map[string]struct{}
}

// scanKeep is the longest member the scan matches, spaces included.
const scanKeep = 128

// maxScanContainers bounds the container ids a scan remembers.
const maxScanContainers = 1024

// feed scans the next piece p of the body; final is set for the last one
// (p may then be empty).
func (s *toolScan) feed(p []byte, final bool) {
	s.used = true
	// s.win holds the bytes the last piece left unscanned: every match
	// starting in them is new.
	s.win = append(s.win, p...)
	limit := len(s.win) - scanKeep // later matches are scanned with the next piece
	if final {
		limit = len(s.win)
	}
	for i := 0; i < limit; {
		j := bytes.IndexByte(s.win[i:limit], '"')
		if j < 0 {
			break
		}
		at := i + j
		i = at + 1
		if at > 0 && s.win[at-1] == '\\' {
			continue // inside a string
		}
		switch {
		case bytes.HasPrefix(s.win[at:], []byte(`"type"`)):
			s.kind(memberValue(s.win[at+len(`"type"`):]))
		case bytes.HasPrefix(s.win[at:], []byte(`"container_id"`)):
			s.container(memberValue(s.win[at+len(`"container_id"`):]))
		}
	}
	if !final && limit > 0 {
		// Keep only what the next piece still has to scan.
		n := copy(s.win, s.win[limit:])
		s.win = s.win[:n]
	}
}

// kind counts a tool call item of type v.
func (s *toolScan) kind(v []byte) {
	switch string(v) {
	case "web_search_call":
		s.calls.WebSearches++
	case "file_search_call":
		s.calls.FileSearches++
	case "image_generation_call":
		s.calls.ImageCalls++
	case "code_interpreter_call":
		s.codeItems++
	}
}

// container records a container id.
func (s *toolScan) container(v []byte) {
	if len(v) == 0 || len(s.containers) >= maxScanContainers {
		return
	}
	if s.containers == nil {
		s.containers = map[string]struct{}{}
	}
	s.containers[string(v)] = struct{}{}
}

// apply returns u with the counted calls.
func (s *toolScan) apply(u billing.Usage) billing.Usage {
	u.WebSearches, u.FileSearches, u.ImageCalls = s.calls.WebSearches, s.calls.FileSearches, s.calls.ImageCalls
	u.CodeSessions = 0
	if s.codeItems > 0 {
		u.CodeSessions = max(int64(len(s.containers)), 1)
	}
	return u
}

// memberValue reads the string value after a member's key in b: optional
// spaces, a colon, optional spaces and a short string without escapes. It
// returns nil when b does not hold one.
func memberValue(b []byte) []byte {
	i := tapcore.SkipSpace(b, 0)
	if i >= len(b) || b[i] != ':' {
		return nil
	}
	i = tapcore.SkipSpace(b, i+1)
	if i >= len(b) || b[i] != '"' {
		return nil
	}
	end := bytes.IndexByte(b[i+1:], '"')
	if end < 0 || end > 64 || bytes.IndexByte(b[i+1:i+1+end], '\\') >= 0 {
		return nil
	}
	return b[i+1 : i+1+end]
}

// bigEvent follows a piece of a Responses stream event too large to parse
// (eventReader forwards it in pieces): a response.completed that carries a
// generated image. It keeps the event's type, from its first piece, and
// its last tapcore.TailKeep bytes, where the response's usage is; at the event's
// end, a terminal event's usage is read from them and the stream ends as
// with a parsed one. Its tool calls were counted from their own, smaller,
// response.<tool>.completed events.
func (t *tap) bigEvent(piece []byte) {
	if !t.big.open {
		t.big.open, t.big.typ = true, eventType(piece)
		t.big.tail = t.big.tail[:0]
	}
	if len(t.big.tail)+len(piece) > 2*tapcore.TailKeep {
		keep := t.big.tail[max(len(t.big.tail)-tapcore.TailKeep, 0):]
		t.big.tail = append(t.big.tail[:0], keep...)
	}
	t.big.tail = append(t.big.tail, piece[max(len(piece)-2*tapcore.TailKeep, 0):]...)
	if !tapcore.EndsEvent(piece) {
		return
	}
	t.big.open = false
	switch t.big.typ {
	case evCompleted, evIncomplete, evFailed:
		t.Tail(t.big.tail)
		t.Term = true
		t.UpstreamErr = t.UpstreamErr || t.big.typ == evFailed
	}
}

// bigEventState is what bigEvent keeps of an event's pieces.
type bigEventState struct {
	open bool
	typ  string
	tail []byte
}

// eventType returns the type of the SSE event that begins with first: its
// "event:" line, else the "type" member at the start of its data.
func eventType(first []byte) string {
	if v, ok := bytes.CutPrefix(first, []byte("event:")); ok {
		if i := bytes.IndexByte(v, '\n'); i >= 0 {
			return string(bytes.TrimSpace(v[:i]))
		}
	}
	head := first[:min(len(first), 512)]
	if i := bytes.Index(head, []byte(`"type"`)); i >= 0 {
		return string(memberValue(head[i+len(`"type"`):]))
	}
	return ""
}
