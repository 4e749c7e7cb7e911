package airmetrics

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Model is a configured model line, the source of a model label.
type Model struct {
	// Pattern is the model id or glob, used as the model label.
	Pattern string
	// Provider names the provider serving the model.
	Provider string
	// ResponseModel is the gen_ai_response_model label: the model name sent
	// upstream, or Pattern when none is configured.
	ResponseModel string
	// Operation is the model's kind (chat, messages, embedding, image or
	// video): its streams are counted under its GenAI operation.
	Operation string
}

// Config binds Metrics to one config.
type Config struct {
	// Models are the configured models.
	Models []Model
	// Providers are the configured provider names.
	Providers []string
	// PerUser adds the per-user and per-key metrics.
	PerUser bool
}

// Observer records the metrics of one config. Its methods are safe for
// concurrent use; a nil *Observer records nothing.
type Observer struct {
	m         *Metrics
	perUser   bool
	routes    map[string]*Route
	providers map[string]*providerMetrics
}

// Bind returns an Observer for c, with the label children of every
// configured model and provider resolved in advance.
func (m *Metrics) Bind(c Config) *Observer {
	o := &Observer{m: m, perUser: c.PerUser, routes: make(map[string]*Route, len(c.Models)),
		providers: make(map[string]*providerMetrics, len(c.Providers))}
	for _, p := range c.Providers {
		o.providers[p] = newProviderMetrics(m, p)
	}
	for _, md := range c.Models {
		resp := md.ResponseModel
		if resp == "" {
			resp = md.Pattern
		}
		o.routes[md.Pattern] = newRoute(o, md.Operation, md.Provider, md.Pattern, resp)
	}
	return o
}

// Route returns the metrics of the configured model pattern, or nil when
// o is nil or the pattern is not configured.
func (o *Observer) Route(pattern string) *Route {
	if o == nil {
		return nil
	}
	return o.routes[pattern]
}

// Reject records a request refused before its model was routed: its model
// and provider are "unknown". endpoint is a ledger endpoint name or the
// request's path (see Endpoint).
func (o *Observer) Reject(endpoint string, status int, reason string) {
	if o == nil {
		return
	}
	ep := Endpoint(endpoint)
	o.m.requests.WithLabelValues(Operation(ep), ep, Unknown, Unknown, OutcomeRejected, strconv.Itoa(status)).Inc()
	o.m.rejections.WithLabelValues(reason).Inc()
}

// Route holds the resolved label children of one configured model.
type Route struct {
	o                         *Observer
	provider, model, endpoint string
	openStreams               prometheus.Gauge
	mu                        sync.Mutex
	requests                  atomic.Pointer[map[requestKey]prometheus.Counter]
	ops                       atomic.Pointer[map[string]*opMetrics]
	durationErr               atomic.Pointer[map[string]prometheus.Observer]
	costs                     atomic.Pointer[map[string]prometheus.Counter]
	respModel                 string
}

// opMetrics are the gen_ai_* children of a route for one operation.
type opMetrics struct {
	tokens     [len(tokenTypes)]prometheus.Observer
	durationOK prometheus.Observer
	ttft, tpot prometheus.Observer
}

// requestKey selects a child of air_requests_total within a route.
type requestKey struct {
	endpoint, outcome string
	status            int
}

// kindEndpoints are the endpoint a model kind is usually called on, whose
// series a route resolves in advance.
var kindEndpoints = map[string]string{"chat": EndpointChatCompletions, "messages": EndpointMessages,
	"embedding": EndpointEmbeddings, "image": EndpointImages, "video": EndpointTasks,
	"speech": EndpointSpeech, "transcription": EndpointTranscriptions, "rerank": EndpointRerank}

func newRoute(o *Observer, kind, provider, model, resp string) *Route {
	m := o.m
	ep := kindEndpoints[kind]
	if ep == "" {
		ep = EndpointOther
	}
	r := &Route{o: o, provider: provider, model: model, respModel: resp, endpoint: ep}
	op := kindOperation(kind)
	r.openStreams = m.openStreams.WithLabelValues(op, provider)
	r.ops.Store(&map[string]*opMetrics{op: r.newOp(op)})
	reqs := map[requestKey]prometheus.Counter{
		{ep, OutcomeOK, 200}: m.requests.WithLabelValues(Operation(ep), ep, provider, model, OutcomeOK, "200"),
	}
	r.requests.Store(&reqs)
	r.durationErr.Store(&map[string]prometheus.Observer{})
	r.costs.Store(&map[string]prometheus.Counter{})
	return r
}

// newOp resolves the gen_ai_* children of operation op.
func (r *Route) newOp(op string) *opMetrics {
	m := r.o.m
	om := &opMetrics{}
	for i, tt := range tokenTypes {
		om.tokens[i] = m.tokenUsage.WithLabelValues(op, r.provider, r.model, r.respModel, tt)
	}
	om.durationOK = m.duration.WithLabelValues(op, r.provider, r.model, r.respModel, "")
	om.ttft = m.ttft.WithLabelValues(op, r.provider, r.model, r.respModel)
	om.tpot = m.tpot.WithLabelValues(op, r.provider, r.model, r.respModel)
	return om
}

// op returns the gen_ai_* children of operation op.
func (r *Route) op(op string) *opMetrics {
	return loadOrAdd(&r.mu, &r.ops, op, func() *opMetrics { return r.newOp(op) })
}

// Tokens are a request's tokens in disjoint buckets (as billing.Usage).
type Tokens struct {
	Input, Output, CacheRead, CacheCreation, Reasoning int64
}

// Request is what happened to one request, for Observe.
type Request struct {
	// Endpoint is the ledger endpoint name or the path the request came
	// on (see Endpoint); "" is the endpoint the route's model kind is
	// usually called on.
	Endpoint string
	// Outcome is one of the Outcome* constants.
	Outcome string
	// Status is the HTTP status the client got.
	Status int
	// Duration is the time from the request's arrival to its end.
	Duration time.Duration
	// FirstByte is the time from the arrival to the first streamed event
	// written to the client; zero when none was (or not a stream).
	FirstByte time.Duration
	// Tokens are the request's tokens (as recorded in the ledger).
	Tokens Tokens
	// Currency and CostNanos are the recorded cost, in nano units of the
	// currency; no cost is counted without a currency.
	Currency  string
	CostNanos int64
	// Unpriced lists the record's charges that had no price
	// (billing.Record.Unpriced).
	Unpriced []string
	// User and KeyID are used only when per-user metrics are on.
	User, KeyID string
}

// Observe records a request served on the route. A nil route records
// nothing.
func (r *Route) Observe(q *Request) {
	if r == nil {
		return
	}
	ep := r.endpointOf(q.Endpoint)
	r.request(ep, q.Outcome, q.Status).Inc()
	opName := Operation(ep)
	om := r.op(opName)
	secs := q.Duration.Seconds()
	if q.Outcome == OutcomeOK {
		om.durationOK.Observe(secs)
	} else {
		r.durationFor(opName, q.Outcome).Observe(secs)
	}
	t := &q.Tokens
	if t.Input > 0 || t.Output > 0 || t.CacheRead > 0 || t.CacheCreation > 0 {
		om.tokens[0].Observe(float64(t.Input))
		om.tokens[1].Observe(float64(t.Output))
		if t.CacheRead > 0 {
			om.tokens[2].Observe(float64(t.CacheRead))
		}
		if t.CacheCreation > 0 {
			om.tokens[3].Observe(float64(t.CacheCreation))
		}
		if t.Reasoning > 0 {
			om.tokens[4].Observe(float64(t.Reasoning))
		}
	}
	if q.FirstByte > 0 {
		om.ttft.Observe(q.FirstByte.Seconds())
		if q.Outcome == OutcomeOK && t.Output > 1 {
			om.tpot.Observe((q.Duration - q.FirstByte).Seconds() / float64(t.Output-1))
		}
	}
	if q.Currency != "" && q.CostNanos != 0 {
		r.cost(q.Currency).Add(float64(q.CostNanos) / 1e9)
	}
	r.Unpriced(q.Unpriced)
	if r.o.perUser {
		r.o.observeUser(q)
	}
}

// Unpriced counts a record's charges that had no price, one per charge
// kind.
func (r *Route) Unpriced(charges []string) {
	if r == nil {
		return
	}
	for _, c := range charges {
		r.o.m.unpriced.WithLabelValues(r.provider, r.model, c).Inc()
	}
}

// Charge records the cost of work billed after its request ended (a task
// that succeeded).
func (r *Route) Charge(currency string, nanos int64, user, keyID string) {
	if r == nil || currency == "" || nanos == 0 {
		return
	}
	r.cost(currency).Add(float64(nanos) / 1e9)
	if r.o.perUser {
		r.o.m.userCost.WithLabelValues(user, keyID, currency).Add(float64(nanos) / 1e9)
	}
}

// Reject records a request on the route, which came on endpoint (see
// Endpoint), that the gateway refused.
func (r *Route) Reject(endpoint string, status int, reason string) {
	if r == nil {
		return
	}
	r.request(r.endpointOf(endpoint), OutcomeRejected, status).Inc()
	r.o.m.rejections.WithLabelValues(reason).Inc()
}

// StreamOpened counts a streaming request in flight until StreamClosed.
func (r *Route) StreamOpened() {
	if r != nil {
		r.openStreams.Inc()
	}
}

// StreamClosed ends what StreamOpened counted.
func (r *Route) StreamClosed() {
	if r != nil {
		r.openStreams.Dec()
	}
}

// Provider names the route's provider.
func (r *Route) Provider() string { return r.provider }

// Model is the route's model label: the configured model id or glob.
func (r *Route) Model() string { return r.model }

// endpointOf returns the endpoint label of name, the route's usual one
// for "".
func (r *Route) endpointOf(name string) string {
	if name == "" {
		return r.endpoint
	}
	return Endpoint(name)
}

// request returns the child of air_requests_total for endpoint, outcome
// and status.
func (r *Route) request(endpoint, outcome string, status int) prometheus.Counter {
	k := requestKey{endpoint, outcome, status}
	if c, ok := (*r.requests.Load())[k]; ok {
		return c
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.requests.Load()
	if c, ok := old[k]; ok {
		return c
	}
	c := r.o.m.requests.WithLabelValues(Operation(endpoint), endpoint, r.provider, r.model, outcome, strconv.Itoa(status))
	next := make(map[requestKey]prometheus.Counter, len(old)+1)
	for kk, v := range old {
		next[kk] = v
	}
	next[k] = c
	r.requests.Store(&next)
	return c
}

// durationFor returns the duration child of operation op for a failed
// outcome.
func (r *Route) durationFor(op, errorType string) prometheus.Observer {
	return loadOrAdd(&r.mu, &r.durationErr, op+"\x00"+errorType, func() prometheus.Observer {
		return r.o.m.duration.WithLabelValues(op, r.provider, r.model, r.respModel, errorType)
	})
}

// cost returns the cost child for currency.
func (r *Route) cost(currency string) prometheus.Counter {
	return loadOrAdd(&r.mu, &r.costs, currency, func() prometheus.Counter {
		return r.o.m.cost.WithLabelValues(currency, r.provider, r.model)
	})
}

// loadOrAdd returns m's value for k, adding newV()'s under mu when missing
// (copy on write: reads take no lock).
func loadOrAdd[V any](mu *sync.Mutex, m *atomic.Pointer[map[string]V], k string, newV func() V) V {
	if v, ok := (*m.Load())[k]; ok {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	old := *m.Load()
	if v, ok := old[k]; ok {
		return v
	}
	v := newV()
	next := withRoom(old)
	next[k] = v
	m.Store(&next)
	return v
}

// withRoom copies a map with room for one more entry.
func withRoom[V any](old map[string]V) map[string]V {
	next := make(map[string]V, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	return next
}

// observeUser records the per-user metrics of q.
func (o *Observer) observeUser(q *Request) {
	o.m.userRequests.WithLabelValues(q.User, q.KeyID, q.Outcome).Inc()
	vals := [...]int64{q.Tokens.Input, q.Tokens.Output, q.Tokens.CacheRead, q.Tokens.CacheCreation, q.Tokens.Reasoning}
	for i, n := range vals {
		if n > 0 {
			o.m.userTokens.WithLabelValues(q.User, q.KeyID, tokenTypes[i]).Add(float64(n))
		}
	}
	if q.Currency != "" && q.CostNanos != 0 {
		o.m.userCost.WithLabelValues(q.User, q.KeyID, q.Currency).Add(float64(q.CostNanos) / 1e9)
	}
}

// Metrics returns the Metrics o records into.
func (o *Observer) Metrics() *Metrics { return o.m }
