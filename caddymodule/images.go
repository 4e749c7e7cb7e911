package caddymodule

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/jsonlimit"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqbody"
	"github.com/caddy-air/caddy-air/tasks"
)

func init() {
	caddy.RegisterModule(Images{})
	httpcaddyfile.RegisterHandlerDirective("air_images", parseHandler[Images])
	httpcaddyfile.RegisterDirectiveOrder("air_images", httpcaddyfile.Before, "respond")
}

// Images is the `air_images` handler: `POST /v1/images/generations`,
// OpenAI's synchronous image API, served by the configured image models
// through the task service. Each request is an image task: it appears in
// the user's task list and is billed per image when it succeeds. The
// answer is OpenAI's: data[].url links to the images re-hosted by the
// media store (for 24 h by default), or, with response_format b64_json,
// data[].b64_json holds them (an image the provider keeps at a long-lived
// URL of its own is answered by url either way). response_format is not
// sent upstream; every other field is, as for a task.
type Images struct {
	// MediaPath is the path prefix under which air_media serves re-hosted
	// media on this site. Default: /media.
	MediaPath string `json:"media_path,omitempty"`

	app *App
	log *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Images) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_images", New: func() caddy.Module { return new(Images) }}
}

// Provision finds the air app.
func (h *Images) Provision(ctx caddy.Context) (err error) {
	h.MediaPath = cleanMediaPath(h.MediaPath)
	h.log = ctx.Logger()
	h.app, err = appFrom(ctx)
	return err
}

// ServeHTTP creates an image task and answers its images.
func (h *Images) ServeHTTP(w http.ResponseWriter, r *http.Request, _ caddyhttp.Handler) error {
	arrived := time.Now()
	var mr *airmetrics.Route // the model's metrics, once known
	refuse := func(err error) error {
		h.app.observeRefusal(w, r, mr, airmetrics.EndpointImages, err)
		return respondError(w, r, err)
	}
	key, st, rt, aerr := h.accept(w, r)
	if aerr != nil {
		return refuse(aerr)
	}
	rb, err := reqbody.Read(w, r, h.app.MaxRequestBody)
	if err != nil {
		return refuse(err)
	}
	defer rb.Release()
	req, aerr := h.request(rb.Bytes(), rt)
	if aerr == nil {
		mr = h.app.cfg.MetricsRoute(req.model)
		if aerr = allowModel(r, key, req.model); aerr == nil {
			aerr = st.Guard.Check()
		}
	}
	if aerr != nil {
		return refuse(aerr)
	}
	// The task service reserves the n images asked for once the body is
	// valid, and charges the images generated in their place before it
	// returns (the hold of a task, as for /v1/tasks).
	admit := rt.AdmitTask(r.Context(), subjectOf(r, key))
	task, aerr := req.create(r.Context(), tasks.Owner{User: key.User, KeyID: key.ID}, req.body, nil, mediaBase(r, h.MediaPath), admit)
	if aerr != nil {
		return refuse(aerr)
	}
	q := airmetrics.Request{Endpoint: airmetrics.EndpointImages, Outcome: airmetrics.OutcomeOK, Status: http.StatusOK,
		User: task.User, KeyID: task.KeyID}
	defer func() { q.Duration = sinceStart(arrived); mr.Observe(&q) }()
	return h.answer(w, r, rt, task, req.format, &q)
}

// accept checks the method (POST), the caller and the body's content
// type.
func (h *Images) accept(w http.ResponseWriter, r *http.Request) (*keys.Key, *gateway.Shared, *gateway.Services, *apierror.Error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return nil, nil, nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use POST on this endpoint")
	}
	key, st, rt, aerr := h.app.caller(r)
	if aerr == nil {
		aerr = checkBody(r)
	}
	return key, st, rt, aerr
}

// imagesRequest is what the gateway read of an images request.
type imagesRequest struct {
	body          []byte
	model, format string
	create        func(context.Context, tasks.Owner, []byte, tasks.Pinner, string, tasks.Admit) (*tasks.Task, *apierror.Error)
}

// request validates an images request's body: bounded JSON whose members
// the gateway reads (n, response_format…) appear once, before the budget
// is reserved by n, for an image model. A request whose model's provider
// does not speak OpenAI loses its response_format, which the gateway
// honours itself.
func (h *Images) request(body []byte, rt *gateway.Services) (imagesRequest, *apierror.Error) {
	if err := jsonlimit.Check(body, h.app.MaxJSONDepth); err != nil {
		return imagesRequest{}, apierror.InvalidBody(err)
	}
	if aerr := tasks.CheckUnique(body, h.app.MaxJSONDepth, tasks.ImagesMembers); aerr != nil {
		return imagesRequest{}, aerr
	}
	format, passThrough, aerr := h.check(body)
	if aerr != nil {
		return imagesRequest{}, aerr
	}
	create := rt.Tasks.CreateImagesHeld
	if !passThrough {
		create = rt.Tasks.CreateHeld
		var err error
		if body, err = sjson.DeleteBytes(body, "response_format"); err != nil {
			return imagesRequest{}, apierror.InvalidRequest("", "could not prepare the request: "+err.Error())
		}
	}
	return imagesRequest{body: body, model: gjson.GetBytes(body, "model").Str, format: format, create: create}, nil
}

// answer writes a finished task's images, or its error, counted in q.
func (h *Images) answer(w http.ResponseWriter, r *http.Request, rt *gateway.Services, task *tasks.Task, format string, q *airmetrics.Request) error {
	if task.Status != tasks.StatusSucceeded || task.Output == nil {
		e := taskError(task)
		q.Outcome, q.Status = airmetrics.OutcomeUpstreamError, e.Status
		return respondError(w, r, e)
	}
	urls := task.Output.ImageURLs
	if len(urls) == 0 && task.Output.ImageURL != "" {
		urls = []string{task.Output.ImageURL}
	}
	if rep := task.Reply; rep != nil && len(rep.Slots) == len(urls) {
		return h.writeReply(w, r, rt, task, rep, urls)
	}
	if format == "b64_json" {
		return h.writeB64(w, r, rt, task, urls)
	}
	data := make([]map[string]string, len(urls))
	for i, u := range urls {
		data[i] = map[string]string{"url": u}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"created": task.CreatedAt.Unix(), "data": data})
}

// check validates what the gateway reads of an images request: an image
// model, and response_format. It returns the format, and whether the
// model's provider speaks OpenAI's protocol, so that the request and the
// answer pass through (see tasks.CreateImagesHeld); the task service
// validates the rest, n included.
func (h *Images) check(body []byte) (format string, passThrough bool, aerr *apierror.Error) {
	// body is valid JSON (jsonlimit.Check); GetBytes reads it in place
	// where ParseBytes would copy it.
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return "", false, apierror.InvalidRequest("", "the request body must be a JSON object")
	}
	if m := gjson.GetBytes(body, "model"); m.Type == gjson.String && m.Str != "" {
		route, err := h.app.Routes().Lookup(m.Str)
		passThrough = err == nil && route.Provider != nil && tasks.PassesImagesThrough(route.Provider.Protocol)
		if err == nil && route.Kind != providers.KindImage {
			return "", false, apierror.InvalidRequest("model", fmt.Sprintf("the model %q is %s model: use %s", m.Str, gateway.WithArticle(route.Kind), gateway.EndpointFor(route.Kind)))
		}
	} // a missing or unknown model is reported by the task service
	switch rf := gjson.GetBytes(body, "response_format"); {
	case !rf.Exists() || rf.Type == gjson.Null || rf.Str == "url":
		format = "url"
	case rf.Str == "b64_json":
		format = "b64_json"
	default:
		return "", false, apierror.InvalidRequest("response_format", "response_format must be url or b64_json")
	}
	return format, passThrough, nil
}

// taskError is the answer to an image task that failed: its error name
// picks the status and code.
func taskError(t *tasks.Task) *apierror.Error {
	name, msg, _ := strings.Cut(t.Error, ": ")
	switch name {
	case "ContentPolicyViolation":
		return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "content_policy_violation", msg)
	case "InvalidParameter":
		return apierror.New(http.StatusBadRequest, apierror.TypeInvalidRequest, "invalid_parameter", msg)
	case "RateLimited":
		e := apierror.New(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", msg)
		e.RetryAfter = 1
		return e
	case "UpstreamTimeout":
		return apierror.New(http.StatusGatewayTimeout, apierror.TypeServer, "upstream_timeout", msg)
	}
	if msg == "" {
		msg = "the image could not be generated"
	}
	return apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_error", msg)
}

// writeB64 answers the images in base64, streamed from the media store in
// constant memory. An image the provider keeps at its own URL is answered
// by url.
func (h *Images) writeB64(w http.ResponseWriter, r *http.Request, rt *gateway.Services, t *tasks.Task, urls []string) error {
	prefix := mediaBase(r, h.MediaPath) + "/"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	fmt.Fprintf(bw, `{"created":%d,"data":[`, t.CreatedAt.Unix())
	for i, u := range urls {
		if i > 0 {
			bw.WriteByte(',')
		}
		id, ok := strings.CutPrefix(u, prefix)
		if !ok {
			q, _ := json.Marshal(u)
			fmt.Fprintf(bw, `{"url":%s}`, q)
			continue
		}
		if err := writeMediaB64(bw, r, rt, id); err != nil {
			// The status is sent: cut the answer so that the client
			// cannot take it for a whole one.
			h.log.Error("reading a generated image", zap.String("task", t.ID), zap.String("media", id), zap.Error(err))
			panic(http.ErrAbortHandler)
		}
	}
	bw.WriteString(`]}`)
	return bw.Flush()
}

// writeReply answers the provider's own answer (tasks.ImagesReply), each
// image's url replaced by its re-hosted link and each b64_json by the
// base64 of the stored image, streamed from the media store.
func (h *Images) writeReply(w http.ResponseWriter, r *http.Request, rt *gateway.Services, t *tasks.Task, rep *tasks.ImagesReply, urls []string) error {
	prefix := mediaBase(r, h.MediaPath) + "/"
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 32<<10)
	prev := 0
	for _, s := range rep.Slots {
		bw.Write(rep.Body[prev:s.At])
		prev = s.At
		u := urls[s.Media]
		id, stored := strings.CutPrefix(u, prefix)
		if !s.B64 || !stored {
			q, _ := json.Marshal(u)
			bw.Write(q)
			continue
		}
		bw.WriteByte('"')
		if err := writeMediaBase64(bw, r, rt, id); err != nil {
			h.log.Error("reading a generated image", zap.String("task", t.ID), zap.String("media", id), zap.Error(err))
			panic(http.ErrAbortHandler)
		}
		bw.WriteByte('"')
	}
	bw.Write(rep.Body[prev:])
	return bw.Flush()
}

// writeMediaB64 writes {"b64_json":"…"} for media id.
func writeMediaB64(bw *bufio.Writer, r *http.Request, rt *gateway.Services, id string) error {
	bw.WriteString(`{"b64_json":"`)
	if err := writeMediaBase64(bw, r, rt, id); err != nil {
		return err
	}
	_, err := bw.WriteString(`"}`)
	return err
}

// writeMediaBase64 writes the base64 of media id, without quotes.
func writeMediaBase64(bw *bufio.Writer, r *http.Request, rt *gateway.Services, id string) error {
	m, err := rt.Tasks.Media(r.Context(), id)
	if err != nil {
		return err
	}
	defer m.Content.Close()
	enc := base64.NewEncoder(base64.StdEncoding, bw)
	if _, err := io.Copy(enc, m.Content); err != nil {
		return err
	}
	return enc.Close()
}

// mediaBase is the absolute URL prefix of re-hosted media for r's site,
// media served under path.
func mediaBase(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// cleanMediaPath returns p, "/media" when empty, with one leading slash
// and no trailing one.
func cleanMediaPath(p string) string {
	if p == "" {
		p = "/media"
	}
	return "/" + strings.Trim(p, "/")
}

// parseMediaPath parses the tokens of air_tasks and air_images, which take
// no argument and one option, media_path, into path.
func parseMediaPath(d *caddyfile.Dispenser, path *string) error {
	d.Next()
	directive := d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "media_path":
			if !d.AllArgs(path) {
				return d.ArgErr()
			}
		default:
			return d.Errf("unrecognized %s option %q", directive, d.Val())
		}
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_images [<matcher>] [{
//		media_path <path>
//	}]
func (h *Images) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return parseMediaPath(d, &h.MediaPath)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Images)(nil)
	_ caddyhttp.MiddlewareHandler = (*Images)(nil)
	_ caddyfile.Unmarshaler       = (*Images)(nil)
)
