package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/console"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/store"
)

// Request-log defaults (request_logs in the config changes them).
const (
	// reqlogCap is the most bytes kept of each body.
	reqlogCap = 64 << 10
	// reqlogTTL is how long a log is kept.
	reqlogTTL = 7 * 24 * time.Hour
	// reqlogQueue is how many logs may wait to be stored; more are dropped.
	reqlogQueue = 1024
)

// requestLogging is the capture of one exchange whose key has request
// logs on; nil when they are off.
type requestLogging struct {
	req, resp *reqlog.Capture
	key       *keys.Key
	arrived   time.Time
	bounds    *gateway.RequestLogBounds
}

// startRequestLog begins the capture of an exchange when key has request
// logs on: the request body is copied (up to the cap) now, since its
// buffer goes back to the pool before the answer ends. The key is the one
// authentication put in the request's context, and the team of its
// user the same way (teams.Service.Of reads memory): no store read.
func startRequestLog(st *gateway.Shared, b *gateway.RequestLogBounds, r *http.Request, key *keys.Key, body []byte, arrived time.Time) *requestLogging {
	if st.RequestLogs == nil || b == nil {
		return nil
	}
	if t := teamOf(r); !key.LogRequests && (t == nil || !t.LogRequests) {
		return nil
	}
	l := &requestLogging{req: reqlog.NewCapture(b.Cap), resp: reqlog.NewCapture(b.Cap), key: key, arrived: arrived, bounds: b}
	_, _ = l.req.Write(body)
	return l
}

// writer returns w teed into the response capture.
func (l *requestLogging) writer(w http.ResponseWriter) http.ResponseWriter {
	if l == nil {
		return w
	}
	return &teeWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, c: l.resp}
}

// finish queues the log under the ledger record's id; the queue
// reassembles, redacts and stores it on its own goroutine.
func (l *requestLogging) finish(st *gateway.Shared, requestID, team string) {
	if l == nil {
		return
	}
	st.RequestLogs.Enqueue(reqlog.Entry{
		Log: store.RequestLog{RequestID: requestID, KeyID: l.key.ID, User: l.key.User, Team: team, Time: l.arrived.UTC(),
			RequestTruncated: l.req.Truncated, ResponseTruncated: l.resp.Truncated},
		Request: l.req.Bytes(), Response: l.resp.Bytes(), TTL: l.bounds.TTL, Redactor: l.bounds.Redactor,
	})
}

// teeWriter copies what is written to the client into a capture.
type teeWriter struct {
	*caddyhttp.ResponseWriterWrapper
	c *reqlog.Capture
}

// Write implements io.Writer.
func (t *teeWriter) Write(p []byte) (int, error) {
	n, err := t.ResponseWriterWrapper.Write(p)
	_, _ = t.c.Write(p[:n])
	return n, err
}

// ReadFrom copies through Write, so that the capture sees the bytes.
func (t *teeWriter) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(struct{ io.Writer }{t}, r)
}

// teeTo returns w teed into c.
func teeTo(w http.ResponseWriter, c *reqlog.Capture) http.ResponseWriter {
	return &teeWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, c: c}
}

// Interface guards.
var (
	_ http.ResponseWriter       = (*teeWriter)(nil)
	_ io.ReaderFrom             = (*teeWriter)(nil)
	_ console.RequestLogService = consoleServices{}
)

// RequestLog implements console.RequestLogService: operators see every
// log, the key's owner its own, a team admin those of the team's members
// (the team the request was billed to, or the owner's team now); anyone
// else gets console.ErrNotFound, as for a record without a log.
func (s consoleServices) RequestLog(ctx context.Context, viewer string, operator bool, id string) (console.RequestLog, error) {
	st, err := s.state()
	if err != nil {
		return console.RequestLog{}, err
	}
	if st.Repos.RequestLogs == nil || viewer == "" {
		return console.RequestLog{}, console.ErrNotFound
	}
	l, err := st.Repos.RequestLogs.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return console.RequestLog{}, console.ErrNotFound
	}
	if err != nil {
		return console.RequestLog{}, err
	}
	if !operator && l.User != viewer && !adminsTeamOf(st, viewer, &l) {
		return console.RequestLog{}, console.ErrNotFound
	}
	return console.RequestLog{ID: l.RequestID, KeyID: l.KeyID, User: l.User, Team: l.Team, Time: l.Time,
		Request: l.Request, Response: l.Response, RequestTruncated: l.RequestTruncated, ResponseTruncated: l.ResponseTruncated}, nil
}

// adminsTeamOf reports whether viewer is an admin of the team l was
// billed to or of the team its user is in now.
func adminsTeamOf(st *gateway.Shared, viewer string, l *store.RequestLog) bool {
	t := st.Teams.Of(viewer)
	if t == nil {
		return false
	}
	admin := false
	for _, m := range t.Members {
		admin = admin || m.User == viewer && m.Admin
	}
	if !admin {
		return false
	}
	if l.Team == t.Name {
		return true
	}
	ut := st.Teams.Of(l.User)
	return ut != nil && ut.Name == t.Name
}
