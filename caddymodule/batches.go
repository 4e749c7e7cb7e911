package caddymodule

import (
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/batches"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/holds"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/tasks"
)

func init() {
	caddy.RegisterModule(Batches{})
	httpcaddyfile.RegisterHandlerDirective("air_batches", parseHandler[Batches])
	httpcaddyfile.RegisterDirectiveOrder("air_batches", httpcaddyfile.Before, "respond")
}

// Batches is the `air_batches` handler: OpenAI's Files API (`POST`,
// `GET /v1/files`, `GET` and `DELETE /v1/files/{id}`, `GET
// /v1/files/{id}/content`) and Batch API (`POST`, `GET /v1/batches`,
// `GET /v1/batches/{id}`, `POST /v1/batches/{id}/cancel`), for the
// caller's user only. The air app's batches block tunes it.
type Batches struct {
	app *App
}

// CaddyModule returns the Caddy module information.
func (Batches) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_batches", New: func() caddy.Module { return new(Batches) }}
}

// Provision finds the air app.
func (h *Batches) Provision(ctx caddy.Context) (err error) {
	h.app, err = appFrom(ctx)
	return err
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_batches [<matcher>]
func (h *Batches) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() || d.NextBlock(0) {
		return d.Err("air_batches takes no options (the air app's batches block tunes it)")
	}
	return nil
}

// ServeHTTP dispatches on method and path.
func (h *Batches) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	key, st, rt, aerr := h.app.caller(r)
	if aerr == nil {
		aerr = checkBody(r)
	}
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	o := batches.Owner{User: key.User, KeyID: key.ID}
	if team := teamOf(r); len(key.Models) > 0 || team != nil {
		// The models both the key and its user's team allow.
		o.Allows = func(model string) bool { return key.Allows(model) && team.Allows(model) }
	}
	path := r.URL.Path
	if i := strings.LastIndex(path, "/files"); i >= 0 && !strings.Contains(path[i:], "/batches") {
		return rt.Batches.ServeFiles(w, r, h, st.Guard.Check, o, strings.Trim(path[i+len("/files"):], "/"))
	}
	if i := strings.LastIndex(path, "/batches"); i >= 0 {
		return h.serveBatches(w, r, key, st, rt, o, strings.Trim(path[i+len("/batches"):], "/"))
	}
	return h.app.refuseRead(w, r, nil, apierror.NotFound("unknown_url", "use /v1/files or /v1/batches"))
}

// done answers v with status and counts the request.
func (h *Batches) done(w http.ResponseWriter, r *http.Request, status int, v any) error {
	h.app.countRead(r, nil, airmetrics.OutcomeOK, status)
	return writeJSON(w, status, v)
}

// Refuse answers a request the gateway refuses by itself (refuseRead).
func (h *Batches) Refuse(w http.ResponseWriter, r *http.Request, err error) error {
	return h.app.refuseRead(w, r, nil, err)
}

// Done answers v with status and counts the request.
func (h *Batches) Done(w http.ResponseWriter, r *http.Request, status int, v any) error {
	return h.done(w, r, status, v)
}

// Count counts a request answered with status.
func (h *Batches) Count(r *http.Request, status int) {
	h.app.countRead(r, nil, airmetrics.OutcomeOK, status)
}

// serveBatches serves /v1/batches[/{id}[/cancel]].
func (h *Batches) serveBatches(w http.ResponseWriter, r *http.Request, key *keys.Key, st *gateway.Shared, rt *gateway.Services, o batches.Owner, rest string) error {
	id, sub, _ := strings.Cut(rest, "/")
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	ctx := r.Context()
	switch {
	case id == "" && r.Method == http.MethodPost:
		return h.create(w, r, key, st, rt, o)
	case id == "" && read:
		limit, aerr := tasks.ParseLimit(r.URL.Query().Get("limit"))
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		l, aerr := rt.Batches.ListBatches(ctx, o, r.URL.Query().Get("after"), limit)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, l)
	case id == "":
		return batches.MethodNotAllowed(w, r, h, "GET, POST")
	case sub == "cancel" && r.Method == http.MethodPost:
		b, aerr := rt.Batches.Cancel(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, b)
	case sub == "cancel":
		return batches.MethodNotAllowed(w, r, h, "POST")
	case sub != "":
		return h.app.refuseRead(w, r, nil, apierror.NotFound("unknown_url", "no such path: "+r.URL.Path))
	case read:
		b, aerr := rt.Batches.GetBatch(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, b)
	default:
		return batches.MethodNotAllowed(w, r, h, "GET")
	}
}

// create serves POST /v1/batches: the batch's estimate is reserved
// against the caller's spend limits, at the batch price, until it ends.
func (h *Batches) create(w http.ResponseWriter, r *http.Request, key *keys.Key, st *gateway.Shared, rt *gateway.Services, o batches.Owner) error {
	rb, err := reqbody.Read(w, r, h.app.MaxRequestBody)
	if err != nil {
		return h.app.refuseRead(w, r, nil, err)
	}
	defer rb.Release()
	if aerr := st.Guard.Check(); aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	subject := subjectOf(r, key)
	ctx := r.Context()
	admit := func(model string, u billing.Usage) (holds.Hold, error) {
		res, aerr := rt.Billing.AdmitBatch(ctx, subject, model, u, batches.ServiceTier)
		if aerr != nil {
			return nil, aerr
		}
		return rt.Hold(res), nil
	}
	b, aerr := rt.Batches.Create(ctx, o, rb.Bytes(), admit)
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	return h.done(w, r, http.StatusOK, b)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Batches)(nil)
	_ caddyhttp.MiddlewareHandler = (*Batches)(nil)
	_ caddyfile.Unmarshaler       = (*Batches)(nil)
	_ batches.Responder           = (*Batches)(nil)
)
