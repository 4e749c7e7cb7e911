// Package admin serves caddy-air's admin API (the `admin.api.air` routes
// under /air/) and formats the reports the `caddy air` command prints. It
// reaches the gateway only through the services of services.go, which
// the Caddy module implements; it does not import Caddy.
package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/store"
)

// API is the admin API over a running gateway:
//
//	POST   /air/keys            {"user","name","expires_at"|"expires_in"} → the new key, once
//	GET    /air/keys[?user=]    → the keys, without secrets
//	PATCH  /air/keys/<id>       {"name","models","expires_at"|"no_expiry","allow_ips","log_requests"} → the changed key
//	DELETE /air/keys/<id>       → revokes the key
//	POST   /air/keys/<id>/regenerate {"grace"} → the key with its new secret, once
//	GET    /air/health          → 200 while billable work is accepted, 503 with the failing checks
//	GET    /air/providers       → each upstream's breaker, cooldown, requests in flight and latency
//	GET    /air/refusals[?id=&user=&limit=] → the last requests this instance refused, newest first
//	GET    /air/audit[?since=&until=&actor=&action=&target=&limit=&before=&format=csv|jsonl] → the audit trail, newest first
//	GET    /air/request-logs/<record id> → the stored request log of a ledger record (404 if none)
//	GET    /air/alerts[?limit=] → the newest alerts' deliveries to each webhook, newest first
//
// and the routes of billingRoutes and teamRoutes.
type API struct {
	// Gateway is the running gateway.
	Gateway Gateway
	// ParseDuration reads a duration such as "720h" or "30d" (expires_in,
	// grace, and since/until of the audit trail); nil: time.ParseDuration.
	ParseDuration func(string) (time.Duration, error)
	// ClientIP is the address of a request's client, for the audit trail;
	// nil: the host of its RemoteAddr.
	ClientIP func(*http.Request) string
}

// parseDuration reads a duration with ParseDuration.
func (a API) parseDuration(s string) (time.Duration, error) {
	if a.ParseDuration == nil {
		return time.ParseDuration(s)
	}
	return a.ParseDuration(s)
}

// clientIP is r's client address, by ClientIP.
func (a API) clientIP(r *http.Request) string {
	if a.ClientIP != nil {
		return a.ClientIP(r)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// HandlerFunc is an admin route's handler: it writes the answer, or
// returns an error, an *Error for one with a status of its own.
type HandlerFunc func(http.ResponseWriter, *http.Request) error

// Route is one route of the admin API.
type Route struct {
	// Pattern is the path (a prefix when it ends with "/").
	Pattern string
	// Handler serves it.
	Handler HandlerFunc
}

// Routes returns the admin routes of caddy-air. Each handler runs with
// the request's actor in its context, for the audit trail.
func (a API) Routes() []Route {
	routes := append([]Route{
		{Pattern: "/air/keys", Handler: a.handleKeys},
		{Pattern: "/air/keys/", Handler: a.handleKey},
		{Pattern: "/air/health", Handler: a.handleHealth},
		{Pattern: "/air/providers", Handler: a.handleProviders},
		{Pattern: "/air/prices", Handler: a.handlePrices},
		{Pattern: "/air/refusals", Handler: a.handleRefusals},
		{Pattern: "/air/audit", Handler: a.handleAudit},
		{Pattern: "/air/alerts", Handler: a.handleAlerts},
		{Pattern: "/air/request-logs/", Handler: a.handleRequestLog},
	}, append(a.billingRoutes(), a.teamRoutes()...)...)
	for i, rt := range routes {
		routes[i].Handler = a.audited(rt.Handler)
	}
	return routes
}

// Error is an error of the admin API: the status to answer with, and the
// error whose text is the message.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Err is the cause; its text is the answer's message.
	Err error
}

// Error implements error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// apiErr returns err as the admin API's error with status; a store's
// refusal on a full disk is 507, whatever status the caller gave.
func apiErr(status int, err error) *Error {
	if errors.Is(err, store.ErrStorageFull) {
		status = http.StatusInsufficientStorage
	}
	return &Error{Status: status, Err: err}
}

// notAllowed is the error of a method a route does not serve.
func notAllowed(r *http.Request) *Error {
	return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
}

// started returns the started gateway's services, or a 503.
func (a API) started() (*Services, error) {
	s, err := a.Gateway.Started()
	if err != nil {
		return nil, apiErr(http.StatusServiceUnavailable, err)
	}
	return s, nil
}

// readState checks that r is a GET and returns the started gateway's
// services.
func (a API) readState(r *http.Request) (*Services, error) {
	if r.Method != http.MethodGet {
		return nil, notAllowed(r)
	}
	return a.started()
}

// maxBody bounds the JSON body of an admin request: a key or a set of
// limits takes a few hundred bytes.
const maxBody = 1 << 20

// decodeBody decodes r's JSON body into v, refusing unknown fields when
// strict; what names the body in errors. The body is checked first: at
// most maxBody bytes, nested no deeper than the running config's
// max_json_depth.
func (a API) decodeBody(w http.ResponseWriter, r *http.Request, v any, strict bool, what string) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiErr(http.StatusRequestEntityTooLarge, fmt.Errorf("decoding %s: the body is larger than %d bytes", what, maxBody))
	}
	if err != nil {
		return apiErr(http.StatusBadRequest, fmt.Errorf("reading %s: %v", what, err))
	}
	var de *jsonlimit.DepthError
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(a.Gateway.MaxJSONDepth())); errors.As(err, &de) {
		return apiErr(http.StatusBadRequest, fmt.Errorf("decoding %s: the request body nests deeper than the limit of %d levels", what, de.Limit))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return apiErr(http.StatusBadRequest, fmt.Errorf("decoding %s: %v", what, err))
	}
	return nil
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}
