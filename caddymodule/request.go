package caddymodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/store"
)

// Variable names under which air_auth leaves the caller's identity for
// later handlers, placeholders ({http.vars.air.user}) and the access log.
const (
	varKey   = "air.key"
	varUser  = "air.user"
	varKeyID = "air.key_id"
)

// identity returns the key that air_auth authenticated for r, or nil.
func identity(r *http.Request) *keys.Key {
	k, _ := caddyhttp.GetVar(r.Context(), varKey).(*keys.Key)
	return k
}

// clientOf names the client of r for the providers' health: the user of
// its key, "" without one.
func clientOf(r *http.Request) string {
	if k := identity(r); k != nil {
		return k.User
	}
	return ""
}

// logFields adds fields to the request's access and error log entries.
// It does nothing when the server keeps no such logs, and adds all fields
// as one inline field: every change to Caddy's extra fields clears a cache
// of log handlers, which allocates, so one change per call is cheaper than
// one per field.
func logFields(r *http.Request, fields ...zap.Field) {
	if srv, ok := r.Context().Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server); ok && srv.Logs == nil {
		return
	}
	extra, ok := r.Context().Value(caddyhttp.ExtraLogFieldsCtxKey).(*caddyhttp.ExtraLogFields)
	if !ok {
		return
	}
	extra.Add(zap.Inline(inlineFields(fields)))
}

// inlineFields marshals a list of fields into the enclosing log entry.
type inlineFields []zap.Field

// MarshalLogObject adds the fields to enc.
func (fs inlineFields) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	for _, f := range fs {
		f.AddTo(enc)
	}
	return nil
}

// anthropicShaped reports whether errors for r use the Anthropic shape: on
// the /v1/messages endpoint and below it, as its SDKs expect.
func anthropicShaped(r *http.Request) bool {
	return strings.HasSuffix(r.URL.Path, "/messages") || strings.Contains(r.URL.Path, "/messages/")
}

// writeError answers r with err in the shape its endpoint's clients expect.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := asAPIError(err)
	if anthropicShaped(r) {
		e.WriteAnthropic(w)
		return
	}
	e.Write(w)
}

// respondError answers r with err in the shape its endpoint's clients
// expect, as writeError does, and returns err as a caddyhttp.HandlerError
// with the answer's status, for the handler to return: Caddy's error log
// then records the failure and the server's handle_errors routes run. The
// client keeps the JSON body written here (see docs/api/errors.md).
func respondError(w http.ResponseWriter, r *http.Request, err error) error {
	e := asAPIError(err)
	writeError(w, r, e)
	// For an unexpected error the client gets a bare 500, the log its cause.
	return caddyhttp.Error(e.Status, err)
}

// asAPIError returns err as an *apierror.Error: a store's refusal on a
// full disk is 507 storage_full, anything else a bare 500.
func asAPIError(err error) *apierror.Error {
	var e *apierror.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, store.ErrStorageFull) {
		return gateway.StorageFull("its storage is full")
	}
	return apierror.Internal()
}

// appFrom returns the air app of ctx, which every handler needs.
func appFrom(ctx caddy.Context) (*App, error) {
	v, err := ctx.App("air")
	if err != nil {
		return nil, fmt.Errorf("getting the air app: %v", err)
	}
	return v.(*App), nil
}

// caller returns the key that air_auth authenticated for r and the
// running app's Shared and Services (gateway.Live), or the error to answer: every handler
// that serves a key's request starts here. A request that reached the
// handler without air_auth fails closed (401); one before the app started
// gets 503.
func (a *App) caller(r *http.Request) (*keys.Key, *gateway.Shared, *gateway.Services, *apierror.Error) {
	key := identity(r)
	if key == nil {
		return nil, nil, nil, errNoIdentity
	}
	st, rt := a.live.Load()
	if st == nil || rt == nil {
		return nil, nil, nil, errNotStarted
	}
	return key, st, rt, nil
}

// errNotStarted answers requests that arrive before the app has started.
var errNotStarted = apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "not_ready", "the gateway is starting; retry shortly")

// errNoIdentity answers a request that reached an air handler without
// passing air_auth: a configuration mistake, so the handler fails closed.
var errNoIdentity = apierror.Unauthorized("this endpoint requires an API key, but air_auth is not configured in front of it")

// writeJSON answers with v encoded as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeRawJSON(w, status, body)
}

// writeRawJSON answers with body, which is JSON already.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}

// allowGet is the Allow header of an endpoint that answers GET, and HEAD
// with GET's headers and no body.
const allowGet = gateway.AllowGet
