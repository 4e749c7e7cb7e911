package mockprovider

import (
	"context"
	"net/http"
	"time"
)

// sseWriter writes server-sent events, each flushed at once, with an
// optional pause between two events. Events are built in one pooled buffer.
type sseWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	delay time.Duration
	timer *time.Timer
	buf   *[]byte
	sent  int
	gone  bool
}

// newSSE starts an event stream answer on w.
func newSSE(w http.ResponseWriter, r *http.Request, delay time.Duration) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{w: w, rc: http.NewResponseController(w), ctx: r.Context(), delay: delay, buf: getBuf()}
}

// begin returns the empty event buffer to append the next event to.
func (s *sseWriter) begin() []byte {
	return (*s.buf)[:0]
}

// emit writes the event b (built on begin's buffer) and flushes it, after
// the configured pause. It reports false once the client is gone.
func (s *sseWriter) emit(b []byte) bool {
	*s.buf = b
	if s.gone {
		return false
	}
	if s.delay > 0 && s.sent > 0 {
		if s.timer == nil {
			s.timer = time.NewTimer(s.delay)
		} else {
			s.timer.Reset(s.delay)
		}
		select {
		case <-s.ctx.Done():
			s.gone = true
			return false
		case <-s.timer.C:
		}
	}
	s.sent++
	if _, err := s.w.Write(b); err != nil {
		s.gone = true
		return false
	}
	if err := s.rc.Flush(); err != nil {
		s.gone = true
		return false
	}
	return true
}

// close releases the stream's resources.
func (s *sseWriter) close() {
	if s.timer != nil {
		s.timer.Stop()
	}
	putBuf(s.buf)
}
