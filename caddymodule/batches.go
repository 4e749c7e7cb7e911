package caddymodule

import (
	"context"
	"errors"
	"io"
	"mime"
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
		return h.serveFiles(w, r, st, rt, o, strings.Trim(path[i+len("/files"):], "/"))
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

// methodNotAllowed answers a method rest does not take.
func (h *Batches) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) error {
	w.Header().Set("Allow", allow)
	return h.app.refuseRead(w, r, nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed",
		"use "+allow+" on "+r.URL.Path))
}

// serveFiles serves /v1/files[/{id}[/content]].
func (h *Batches) serveFiles(w http.ResponseWriter, r *http.Request, st *gateway.Shared, rt *gateway.Services, o batches.Owner, rest string) error {
	id, sub, _ := strings.Cut(rest, "/")
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	ctx := r.Context()
	switch {
	case id == "" && r.Method == http.MethodPost:
		if aerr := st.Guard.Check(); aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		f, aerr := h.upload(w, r, rt, o)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, f)
	case id == "" && read:
		limit, aerr := tasks.ParseLimit(r.URL.Query().Get("limit"))
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		l, aerr := rt.Batches.ListFiles(ctx, o, r.URL.Query().Get("after"), limit)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, l)
	case id == "":
		return h.methodNotAllowed(w, r, "GET, POST")
	case sub == "content" && read:
		m, aerr := rt.Batches.OpenFile(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		defer m.Content.Close()
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.app.countRead(r, nil, airmetrics.OutcomeOK, http.StatusOK)
		http.ServeContent(w, r, "", m.Created, m.Content)
		return nil
	case sub != "":
		return h.app.refuseRead(w, r, nil, apierror.NotFound("unknown_url", "no such path: "+r.URL.Path))
	case read:
		f, aerr := rt.Batches.GetFile(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, f)
	case r.Method == http.MethodDelete:
		if aerr := rt.Batches.DeleteFile(ctx, o, id); aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, map[string]any{"id": id, "object": "file", "deleted": true})
	default:
		return h.methodNotAllowed(w, r, "GET, DELETE")
	}
}

// maxFormField bounds a multipart form field other than the file.
const maxFormField = 1 << 10

// upload reads a multipart upload, streaming its file part to the store:
// a purpose field and a file part, each once, in any order.
func (h *Batches) upload(w http.ResponseWriter, r *http.Request, rt *gateway.Services, o batches.Owner) (*batches.File, *apierror.Error) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return nil, apierror.New(http.StatusUnsupportedMediaType, apierror.TypeInvalidRequest, "invalid_request",
			"the body must be multipart/form-data with a purpose field and a file")
	}
	// The multipart framing around the file is small: a body much larger
	// than the file limit is cut off.
	r.Body = http.MaxBytesReader(w, r.Body, rt.Batches.MaxFileBytes()+64<<10)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, apierror.InvalidRequest("", "the body is not a valid multipart form: "+err.Error())
	}
	var f *batches.File
	var purpose string
	seen := map[string]bool{}
	fail := func(aerr *apierror.Error) (*batches.File, *apierror.Error) {
		if f != nil {
			_ = rt.Batches.DeleteFile(context.WithoutCancel(r.Context()), o, f.ID)
		}
		return nil, aerr
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(apierror.New(http.StatusRequestEntityTooLarge, apierror.TypeInvalidRequest, "file_too_large",
				"the upload is larger than the file size limit").WithParam("file"))
		}
		if err != nil {
			return fail(apierror.InvalidRequest("", "the body is not a valid multipart form: "+err.Error()))
		}
		name := part.FormName()
		if name != "file" && name != "purpose" {
			_ = part.Close()
			continue
		}
		if seen[name] {
			return fail(apierror.InvalidRequest(name, name+": appears more than once"))
		}
		seen[name] = true
		if name == "purpose" {
			b, err := io.ReadAll(io.LimitReader(part, maxFormField))
			if err != nil {
				return fail(apierror.InvalidRequest("purpose", "purpose: could not be read"))
			}
			purpose = string(b)
			continue
		}
		// The purpose may follow the file: the file is stored as a batch
		// input and deleted if the purpose says otherwise.
		var aerr *apierror.Error
		if f, aerr = rt.Batches.Upload(r.Context(), o, batches.PurposeBatch, part.FileName(), part); aerr != nil {
			return fail(aerr)
		}
	}
	switch {
	case !seen["file"]:
		return fail(apierror.InvalidRequest("file", "file: a file part is required"))
	case purpose != batches.PurposeBatch:
		return fail(apierror.InvalidRequest("purpose", "purpose: must be 'batch'"))
	}
	return f, nil
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
		return h.methodNotAllowed(w, r, "GET, POST")
	case sub == "cancel" && r.Method == http.MethodPost:
		b, aerr := rt.Batches.Cancel(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, b)
	case sub == "cancel":
		return h.methodNotAllowed(w, r, "POST")
	case sub != "":
		return h.app.refuseRead(w, r, nil, apierror.NotFound("unknown_url", "no such path: "+r.URL.Path))
	case read:
		b, aerr := rt.Batches.GetBatch(ctx, o, id)
		if aerr != nil {
			return h.app.refuseRead(w, r, nil, aerr)
		}
		return h.done(w, r, http.StatusOK, b)
	default:
		return h.methodNotAllowed(w, r, "GET")
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
)
