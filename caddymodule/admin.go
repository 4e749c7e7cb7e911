package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"

	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

func init() {
	caddy.RegisterModule(Admin{})
}

// running is the air app of the active config, for the admin API: admin
// modules are provisioned before apps exist, so they look it up per request.
var running atomic.Pointer[App]

// Admin is the `admin.api.air` module: key management, usage reports and
// budgets over Caddy's admin API. The `caddy air` command is its client.
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
type Admin struct{}

// CaddyModule returns the Caddy module information.
func (Admin) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.air",
		New: func() caddy.Module { return new(Admin) },
	}
}

// Routes returns the admin routes of caddy-air. Each handler runs with
// the request's actor in its context, for the audit trail.
func (a Admin) Routes() []caddy.AdminRoute {
	routes := append([]caddy.AdminRoute{
		{Pattern: "/air/keys", Handler: caddy.AdminHandlerFunc(a.handleKeys)},
		{Pattern: "/air/keys/", Handler: caddy.AdminHandlerFunc(a.handleKey)},
		{Pattern: "/air/health", Handler: caddy.AdminHandlerFunc(a.handleHealth)},
		{Pattern: "/air/providers", Handler: caddy.AdminHandlerFunc(a.handleProviders)},
		{Pattern: "/air/prices", Handler: caddy.AdminHandlerFunc(a.handlePrices)},
		{Pattern: "/air/refusals", Handler: caddy.AdminHandlerFunc(a.handleRefusals)},
		{Pattern: "/air/audit", Handler: caddy.AdminHandlerFunc(a.handleAudit)},
		{Pattern: "/air/alerts", Handler: caddy.AdminHandlerFunc(a.handleAlerts)},
		{Pattern: "/air/request-logs/", Handler: caddy.AdminHandlerFunc(a.handleRequestLog)},
	}, append(a.billingRoutes(), a.teamRoutes()...)...)
	for i, rt := range routes {
		routes[i].Handler = caddy.AdminHandlerFunc(auditedAdmin(rt.Handler.ServeHTTP))
	}
	return routes
}

// startedState returns the running app's state, or an API error.
func startedState() (*gateway.Shared, error) {
	app := running.Load()
	if app == nil {
		return nil, apiErr(http.StatusServiceUnavailable, errors.New("the air app is not running: configure a global `air` option"))
	}
	st := app.live.Shared()
	if st == nil {
		return nil, apiErr(http.StatusServiceUnavailable, errors.New("the air app is starting"))
	}
	return st, nil
}

// createKeyRequest is the body of POST /air/keys.
type createKeyRequest struct {
	keys.CreateOptions
	// ExpiresIn is an alternative to expires_at: a duration from now such
	// as "720h" or "30d".
	ExpiresIn string `json:"expires_in,omitempty"`
}

// createKeyResponse is the answer to POST /air/keys: the secret, shown once.
type createKeyResponse struct {
	*keys.Key
	// Secret is the API key itself. It is not stored and cannot be shown
	// again.
	Secret string `json:"key"`
}

func (Admin) handleKeys(w http.ResponseWriter, r *http.Request) error {
	st, err := startedState()
	if err != nil {
		return err
	}
	switch r.Method {
	case http.MethodGet:
		list, err := st.Keys.List(r.Context(), r.URL.Query().Get("user"))
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		if list == nil {
			list = []*keys.Key{}
		}
		return writeAdminJSON(w, http.StatusOK, list)
	case http.MethodPost:
		var req createKeyRequest
		if err := decodeAdminBody(w, r, &req, false, "request"); err != nil {
			return err
		}
		if req.ExpiresIn != "" {
			d, err := caddy.ParseDuration(req.ExpiresIn)
			if err != nil || d <= 0 {
				return apiErr(http.StatusBadRequest, fmt.Errorf("expires_in: bad duration %q", req.ExpiresIn))
			}
			t := time.Now().Add(d).UTC()
			req.ExpiresAt = &t
		}
		secret, k, err := st.CreateKey(r.Context(), req.CreateOptions)
		if err != nil {
			return apiErr(http.StatusBadRequest, err)
		}
		return writeAdminJSON(w, http.StatusCreated, createKeyResponse{Key: k, Secret: secret})
	default:
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
}

func (Admin) handleKey(w http.ResponseWriter, r *http.Request) error {
	st, err := startedState()
	if err != nil {
		return err
	}
	id := strings.TrimPrefix(r.URL.Path, "/air/keys/")
	if kid, ok := strings.CutSuffix(id, "/regenerate"); ok {
		return handleRegenerate(w, r, st, kid)
	}
	var k *keys.Key
	switch r.Method {
	case http.MethodDelete:
		k, err = st.RevokeKey(r.Context(), "", id)
	case http.MethodPatch:
		var c keys.Change
		if err := decodeAdminBody(w, r, &c, true, "key change"); err != nil {
			return err
		}
		k, err = st.UpdateKey(r.Context(), id, c)
		if err != nil && !errors.Is(err, keys.ErrNoSuchKey) {
			return apiErr(http.StatusBadRequest, err)
		}
	default:
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	if errors.Is(err, keys.ErrNoSuchKey) {
		return apiErr(http.StatusNotFound, fmt.Errorf("no key with id %q", id))
	}
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeAdminJSON(w, http.StatusOK, k)
}

// maxAdminBody bounds the JSON body of an admin request: a key or a set of
// limits takes a few hundred bytes.
const maxAdminBody = 1 << 20

// decodeAdminBody decodes r's JSON body into v, refusing unknown fields when
// strict; what names the body in errors. The body is checked first: at most
// maxAdminBody bytes, nested no deeper than the running config's
// max_json_depth.
func decodeAdminBody(w http.ResponseWriter, r *http.Request, v any, strict bool, what string) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apiErr(http.StatusRequestEntityTooLarge, fmt.Errorf("decoding %s: the body is larger than %d bytes", what, maxAdminBody))
	}
	if err != nil {
		return apiErr(http.StatusBadRequest, fmt.Errorf("reading %s: %v", what, err))
	}
	limit := 0
	if a := running.Load(); a != nil {
		limit = a.MaxJSONDepth
	}
	var de *jsonlimit.DepthError
	if err := jsonlimit.Check(body, jsonlimit.OrDefault(limit)); errors.As(err, &de) {
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

// apiErr returns err as the admin API's error with status; a store's
// refusal on a full disk is 507, whatever status the caller gave.
func apiErr(status int, err error) caddy.APIError {
	if errors.Is(err, store.ErrStorageFull) {
		status = http.StatusInsufficientStorage
	}
	return caddy.APIError{HTTPStatus: status, Err: err}
}

func writeAdminJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// Interface guard.
var _ caddy.AdminRouter = Admin{}
