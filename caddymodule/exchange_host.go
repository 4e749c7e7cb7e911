package caddymodule

import (
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/reqbody"
)

// exchangeHost is what the exchange pipeline (gateway.Engine) takes of
// the app and of Caddy: the one adapter between them.
type exchangeHost struct{ app *App }

// Caller returns the key air_auth authenticated for r, its team, and the
// running app's state and runtime (caller).
func (x exchangeHost) Caller(r *http.Request) (gateway.Deps, *apierror.Error) {
	key, st, rt, aerr := x.app.caller(r)
	if aerr != nil {
		return gateway.Deps{}, aerr
	}
	return gateway.Deps{Key: key, Team: teamOf(r), Subject: subjectOf(r, key), Shared: st, Services: rt}, nil
}

// ReadBody reads r's body into a pooled buffer (reqbody.Read).
func (exchangeHost) ReadBody(w http.ResponseWriter, r *http.Request, limit int64) (gateway.Body, error) {
	rb, err := reqbody.Read(w, r, limit)
	if err != nil {
		return nil, err
	}
	return rb, nil
}

// StartLog begins the exchange's request log (startRequestLog).
func (x exchangeHost) StartLog(r *http.Request, d *gateway.Deps, body []byte, arrived time.Time) gateway.RequestLog {
	st := d.Shared
	l := startRequestLog(st, x.app.cfg.RequestLogs, r, d.Key, body, arrived)
	if l == nil {
		return nil
	}
	return exchangeLog{l, st}
}

// RequestID returns r's gateway request id (requestIDOf).
func (exchangeHost) RequestID(w http.ResponseWriter, r *http.Request) string {
	return requestIDOf(w, r)
}

// LogFields adds fields to r's access log entry (logFields).
func (exchangeHost) LogFields(r *http.Request, fields ...zap.Field) { logFields(r, fields...) }

// Refuse counts a refusal and answers it (observeRefusal, respondError).
func (x exchangeHost) Refuse(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, endpoint string, err error) error {
	x.app.observeRefusal(w, r, mr, endpoint, err)
	return respondError(w, r, err)
}

// exchangeLog is a request log of the exchange pipeline.
type exchangeLog struct {
	l  *requestLogging
	st *gateway.Shared
}

// Writer returns w teed into the capture.
func (e exchangeLog) Writer(w http.ResponseWriter) http.ResponseWriter { return e.l.writer(w) }

// Finish queues the log.
func (e exchangeLog) Finish(requestID, team string) { e.l.finish(e.st, requestID, team) }

// Interface guards.
var (
	_ gateway.Host       = exchangeHost{}
	_ gateway.Body       = (*reqbody.Body)(nil)
	_ gateway.RequestLog = exchangeLog{}
)
