package caddymodule

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/store"
	"github.com/caddy-air/caddy-air/tasks"
)

func init() {
	caddy.RegisterModule(Tasks{})
	gateway.RegisterKind(providers.KindImage, "POST /v1/tasks")
	gateway.RegisterKind(providers.KindVideo, "POST /v1/tasks")
	caddy.RegisterModule(Media{})
	httpcaddyfile.RegisterHandlerDirective("air_tasks", parseHandler[Tasks])
	httpcaddyfile.RegisterHandlerDirective("air_media", parseHandler[Media])
	httpcaddyfile.RegisterDirectiveOrder("air_tasks", httpcaddyfile.Before, "respond")
	httpcaddyfile.RegisterDirectiveOrder("air_media", httpcaddyfile.Before, "respond")
}

// Tasks is the `air_tasks` handler: `POST /v1/tasks` creates an image
// (synchronous) or video (asynchronous) task, `GET /v1/tasks/{id}` reads
// one, `GET /v1/tasks?limit=N` lists the caller's user's most recent ones.
type Tasks struct {
	// MediaPath is the path prefix under which air_media serves re-hosted
	// media on this site. Default: /media.
	MediaPath string `json:"media_path,omitempty"`

	app *App
}

// CaddyModule returns the Caddy module information.
func (Tasks) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_tasks", New: func() caddy.Module { return new(Tasks) }}
}

// Provision finds the air app.
func (h *Tasks) Provision(ctx caddy.Context) (err error) {
	h.MediaPath = cleanMediaPath(h.MediaPath)
	h.app, err = appFrom(ctx)
	return err
}

// ServeHTTP dispatches on method and path.
func (h *Tasks) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	key, st, rt, aerr := h.app.caller(r)
	if aerr == nil {
		aerr = checkBody(r)
	}
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	owner := tasks.Owner{User: key.User, KeyID: key.ID}
	if len(key.Models) > 0 {
		owner.Scope = key.Allows // a key reads the tasks of its models only
	}
	id := ""
	if i := strings.Index(r.URL.Path, "/tasks/"); i >= 0 {
		id = r.URL.Path[i+len("/tasks/"):]
	}
	// HEAD reads as GET; the server leaves out the body.
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case r.Method == http.MethodPost && id == "":
		return h.create(w, r, key, st, rt)
	case read && id != "":
		return h.get(w, r, rt, owner, id)
	case read:
		return h.list(w, r, rt, owner)
	default:
		allow := "GET, HEAD, POST"
		if id != "" {
			allow = "GET, HEAD"
		}
		w.Header().Set("Allow", allow)
		return h.app.refuseRead(w, r, nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed",
			"use POST /v1/tasks, GET /v1/tasks/{id} or GET /v1/tasks"))
	}
}

// get serves GET /v1/tasks/{id}.
func (h *Tasks) get(w http.ResponseWriter, r *http.Request, rt *gateway.Services, owner tasks.Owner, id string) error {
	task, aerr := rt.Tasks.Get(r.Context(), owner, id)
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	h.app.countRead(r, h.app.cfg.MetricsRoute(task.Model), airmetrics.OutcomeOK, http.StatusOK)
	return writeJSON(w, http.StatusOK, task.QueryView())
}

// list serves GET /v1/tasks.
func (h *Tasks) list(w http.ResponseWriter, r *http.Request, rt *gateway.Services, owner tasks.Owner) error {
	limit, aerr := tasks.ParseLimit(r.URL.Query().Get("limit"))
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	page, aerr := rt.Tasks.ListPage(r.Context(), owner, r.URL.Query().Get("after"), limit)
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	h.app.countRead(r, nil, airmetrics.OutcomeOK, http.StatusOK)
	return writeJSON(w, http.StatusOK, tasks.NewListView(page.Tasks, page.HasMore))
}

// create serves POST /v1/tasks.
func (h *Tasks) create(w http.ResponseWriter, r *http.Request, key *keys.Key, st *gateway.Shared, rt *gateway.Services) error {
	arrived := time.Now()
	var mr *airmetrics.Route // the model's metrics, once known
	refuse := func(err error) error {
		h.app.observeRefusal(w, r, mr, "tasks", err)
		return respondError(w, r, err)
	}
	rb, err := reqbody.Read(w, r, h.app.MaxRequestBody)
	if err != nil {
		return refuse(err)
	}
	// The buffer is used until CreateFrom returns, and by upstream
	// requests sending it until their transports close them.
	defer rb.Release()
	body := rb.Bytes()
	model, aerr := tasks.CheckCreate(body, h.app.MaxJSONDepth)
	if aerr != nil {
		return refuse(aerr)
	}
	mr = h.app.cfg.MetricsRoute(model)
	task, aerr := rt.Tasks.CreateFor(r.Context(), tasks.Caller{
		Owner: tasks.Owner{User: key.User, KeyID: key.ID},
		Allow: func(model string) *apierror.Error { return allowModel(r, key, model) },
		Guard: st.Guard.Check, Admit: rt.AdmitTask(r.Context(), subjectOf(r, key)), MediaBase: h.mediaBase(r),
	}, model, body, rb)
	if aerr != nil {
		return refuse(aerr)
	}
	err = writeJSON(w, http.StatusAccepted, task.CreateView())
	if mr != nil {
		q := airmetrics.Request{Endpoint: airmetrics.EndpointTasks, Outcome: airmetrics.OutcomeOK, Status: http.StatusAccepted, Duration: sinceStart(arrived),
			User: key.User, KeyID: key.ID}
		if task.Status == tasks.StatusFailed {
			q.Outcome = airmetrics.OutcomeUpstreamError
		}
		mr.Observe(&q)
	}
	return err
}

// mediaBase is the absolute URL prefix of re-hosted media for r's site.
func (h *Tasks) mediaBase(r *http.Request) string { return mediaBase(r, h.MediaPath) }

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_tasks [<matcher>] [{
//		media_path <path>
//	}]
func (h *Tasks) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseMediaPath(d, &h.MediaPath)
}

// Media is the `air_media` handler: it serves the images and videos that
// tasks re-hosted, by their unguessable id, without an API key, until their
// TTL ends. Every answer has Content-Security-Policy "default-src 'none';
// sandbox" and nosniff; a file whose type is not a safe image or video
// type is served as application/octet-stream, as an attachment. Like file_server, it answers HEAD, byte ranges (206) and
// conditional requests (ETag, Last-Modified), streaming from the media
// store in constant memory whatever the file's size.
type Media struct {
	app *App
}

// CaddyModule returns the Caddy module information.
func (Media) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_media", New: func() caddy.Module { return new(Media) }}
}

// Provision finds the air app.
func (h *Media) Provision(ctx caddy.Context) (err error) {
	h.app, err = appFrom(ctx)
	return err
}

// ServeHTTP serves one media file.
func (h *Media) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return respondError(w, r, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use GET"))
	}
	rt := h.app.live.Services()
	if rt == nil {
		return respondError(w, r, errNotStarted)
	}
	id := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	m, err := rt.Tasks.Media(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return respondError(w, r, apierror.NotFound("media_not_found", "no such media, or its link has expired"))
	}
	if err != nil {
		return respondError(w, r, err)
	}
	defer m.Content.Close()
	setMediaHeaders(w.Header(), m.ContentType, m.ETag())
	// Ranges, validators, HEAD and Content-Length, as file_server does.
	http.ServeContent(w, r, "", m.Created, m.Content)
	return nil
}

// setMediaHeaders sets the headers of a media answer, for a file stored
// with contentType. The media share the console's origin, so nothing in
// them may run: a type outside the safe ones (media stored before they
// were enforced) is served as a download.
func setMediaHeaders(hdr http.Header, contentType, etag string) {
	ctype, safe := tasks.SafeMediaType(contentType)
	hdr.Set("Content-Type", ctype)
	if !safe {
		hdr.Set("Content-Disposition", "attachment")
	}
	hdr.Set("Content-Security-Policy", mediaCSP)
	hdr.Set("ETag", etag)
	hdr.Set("Cache-Control", "private, max-age=3600")
	hdr.Set("X-Content-Type-Options", "nosniff")
}

// mediaCSP is the Content-Security-Policy of every media answer: no
// script, style, frame or fetch, in a sandbox, even if opened as a page.
const mediaCSP = "default-src 'none'; sandbox"

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_media [<matcher>]
func (h *Media) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Tasks)(nil)
	_ caddy.Provisioner           = (*Media)(nil)
	_ caddyhttp.MiddlewareHandler = (*Tasks)(nil)
	_ caddyhttp.MiddlewareHandler = (*Media)(nil)
	_ caddyfile.Unmarshaler       = (*Tasks)(nil)
	_ caddyfile.Unmarshaler       = (*Media)(nil)
)
