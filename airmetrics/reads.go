package airmetrics

import "strconv"

// Count records a request that asks no model for work (a read: the
// models list, a task, a stored response) in air_requests_total alone,
// with its outcome and status, under r's model and provider, or unknown
// ones when r is nil: reads observe no duration or tokens, so that they
// do not mix with the latency of the work they read. endpoint is a
// ledger endpoint name or the request's path (see Endpoint).
func (o *Observer) Count(r *Route, endpoint, outcome string, status int) {
	if o == nil {
		return
	}
	if r != nil {
		r.request(r.endpointOf(endpoint), outcome, status).Inc()
		return
	}
	ep := Endpoint(endpoint)
	o.m.requests.WithLabelValues(Operation(ep), ep, Unknown, Unknown, outcome, strconv.Itoa(status)).Inc()
}
