package gateway

import (
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/teams"
)

// LedgerWait bounds how long the end of a response waits for its ledger
// record to become durable before the client gets an error instead.
const LedgerWait = 10 * time.Second

// Engine serves the exchanges of one endpoint: authenticate → read →
// inspect → route → admit → intend → proxy → settle → release. Every
// exchange an upstream saw leaves exactly one ledger record (unless the
// endpoint is Unbilled), made durable before the client gets the held
// end of its answer (chatproxy.Held), which the engine then writes.
type Engine struct {
	// Endpoint is what the engine serves.
	Endpoint Endpoint
	// Host is the server the engine runs in.
	Host Host
	// Proxy makes the upstream attempts.
	Proxy *chatproxy.Proxy
	// Routes are the configured models.
	Routes *providers.Table
	// Metrics observes requests; nil when metrics are off.
	Metrics *airmetrics.Observer
	// Log is the handler's logger.
	Log *zap.Logger
	// MaxRequestBody bounds a request body, unless the endpoint's
	// Body.MaxBody does; MaxJSONDepth bounds the nesting of a JSON one.
	MaxRequestBody int64
	MaxJSONDepth   int
}

// Host is what the engine needs of the server it runs in: who the caller
// is, the request's body buffer and id, its log fields, refusals, and
// the services of the running configuration.
type Host interface {
	// Caller returns who sent r and what it is served with, or the error
	// to answer (the authenticate step).
	Caller(r *http.Request) (Deps, *apierror.Error)
	// ReadBody reads r's body, up to limit bytes.
	ReadBody(w http.ResponseWriter, r *http.Request, limit int64) (Body, error)
	// StartLog begins the request log of an exchange, or returns nil when
	// its key and team keep none.
	StartLog(r *http.Request, d *Deps, body []byte, arrived time.Time) RequestLog
	// RequestID returns r's gateway request id, sent to the client.
	RequestID(w http.ResponseWriter, r *http.Request) string
	// LogFields adds fields to r's access log entry.
	LogFields(r *http.Request, fields ...zap.Field)
	// Refuse answers a request the gateway refuses by itself with err,
	// counts and logs the refusal (under mr's model, when known), and
	// returns the error the handler returns.
	Refuse(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, endpoint string, err error) error
}

// Deps are what one request is served with: its caller, and the services
// of the configuration running when it arrived.
type Deps struct {
	// Key is the caller's API key; Team its user's team, or nil.
	Key  *keys.Key
	Team *teams.Team
	// Subject is who the request is billed to.
	Subject billing.Subject
	// Shared and Services are what the request is served with: the state
	// that outlives reloads, and the running configuration's services,
	// for the endpoint's hooks (Pin, Settle).
	Shared   *Shared
	Services *Services
}

// Body is a request body read into a pooled buffer: the handler holds it
// until Release, and upstream requests pin it while they send it.
type Body interface {
	chatproxy.Pinner
	// Bytes returns the body.
	Bytes() []byte
	// Reserve grows the buffer to hold n bytes, if the budget allows.
	Reserve(n int)
	// Release lets go of the handler's hold; calls after the first do
	// nothing.
	Release()
}

// RequestLog is the capture of one exchange whose key or team keeps
// request logs.
type RequestLog interface {
	// Writer returns w teed into the capture.
	Writer(w http.ResponseWriter) http.ResponseWriter
	// Finish queues the log under the ledger record's id.
	Finish(requestID, team string)
}

// Exchange is one request's life through the engine.
type Exchange struct {
	e *Engine
	// W and R are the exchange's writer (teed into its request log, when
	// kept) and request.
	W http.ResponseWriter
	R *http.Request
	// Deps are what it is served with (set by authenticate).
	Deps Deps
	// Arrived is when it arrived.
	Arrived time.Time
	// Body is the request body (set by read).
	Body Body
	// In is what inspect read of it.
	In dialect.Inspected
	// Route is its model's route; Metrics the route's metrics.
	Route   *providers.Route
	Metrics *airmetrics.Route
	// Reservation is what admit reserved of the budgets.
	Reservation *billing.Reservation
	// RequestID names the request and its ledger record.
	RequestID string
	// Record is its ledger record, once settled.
	Record billing.Record
	// Result is what the proxy did.
	Result chatproxy.Result

	attempts     []providers.Attempt
	legs         *legs
	upstreamBody []byte
	injected     bool
	rebody       func(string) ([]byte, error)
	estimate     billing.Usage
	log          RequestLog
	q            airmetrics.Request
	proxied      bool // Result must be closed
	observed     bool // q is observed once the exchange ends
	stream       bool // the route's stream gauge was opened
}

// Serve serves one exchange of the engine's endpoint on w and r.
func (e *Engine) Serve(w http.ResponseWriter, r *http.Request) error {
	x := exchanges.Get().(*Exchange)
	x.e, x.W, x.R, x.Arrived = e, w, r, time.Now()
	defer x.release()
	for _, step := range [...]func(*Exchange) error{(*Exchange).authenticate, (*Exchange).read, (*Exchange).inspect,
		(*Exchange).route, (*Exchange).admit} {
		if err := step(x); err != nil {
			return err
		}
	}
	if e.Endpoint.Count != nil && !messagesOnly(x.Route) {
		return e.Endpoint.Count(x)
	}
	if e.Endpoint.Billing.Mode == Unbilled {
		return x.serveUnbilled()
	}
	if err := x.intend(); err != nil {
		return err
	}
	x.proxy()
	return x.settle()
}

// Refuse answers the exchange with err, a refusal of the gateway's own,
// counted under the model's route once known.
func (x *Exchange) Refuse(err error) error {
	return x.e.Host.Refuse(x.W, x.R, x.Metrics, x.e.Endpoint.Name, err)
}

// LogFields adds fields to the request's access log entry.
func (x *Exchange) LogFields(fields ...zap.Field) { x.e.Host.LogFields(x.R, fields...) }

// Engine returns the engine that serves the exchange.
func (x *Exchange) Engine() *Engine { return x.e }

// Logged reports whether the exchange is request-logged.
func (x *Exchange) Logged() bool { return x.log != nil }

// release ends the exchange, in this order: the proxy's result closed,
// the request observed in the metrics, the stream gauge closed, and the
// body let go of (if the proxy did not already).
func (x *Exchange) release() {
	if x.proxied {
		x.Result.Close()
	}
	if x.observed {
		x.q.Duration, x.q.Endpoint = SinceStart(x.Arrived), x.e.Endpoint.Name
		x.Metrics.Observe(&x.q)
	}
	if x.stream {
		x.Metrics.StreamClosed()
	}
	if x.Body != nil {
		x.Body.Release()
	}
	*x = Exchange{}
	exchanges.Put(x)
}

// exchanges are the Exchange values of ended requests, for reuse: an
// exchange is about 2 KB, allocated per request otherwise. Nothing keeps
// one past its release (hooks get it only while it runs).
var exchanges = sync.Pool{New: func() any { return new(Exchange) }}

// SinceStart is the duration since start, at least a nanosecond.
func SinceStart(start time.Time) time.Duration { return max(time.Since(start), 1) }

// DurationMillis is d in whole milliseconds, at least 1 for a positive
// d: a ledger record's DurationMillis, where 0 means not measured.
func DurationMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return max(d.Milliseconds(), 1)
}
