package caddymodule

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
)

func init() {
	caddy.RegisterModule(Auth{})
	httpcaddyfile.RegisterHandlerDirective("air_auth", parseHandler[Auth])
	httpcaddyfile.RegisterDirectiveOrder("air_auth", httpcaddyfile.After, "basic_auth")
}

// Auth is the `air_auth` handler: it requires a valid `sk-air-` key on
// every request, as `Authorization: Bearer sk-air-…` or, as Anthropic's
// SDKs send it, `x-api-key: sk-air-…`. It leaves the key's user and id in
// the variables air.user and air.key_id (and in the access log). The
// handlers behind it check a body's content type: JSON, or a multipart
// form where an endpoint takes one (gateway.BodyPolicy, checkBody).
type Auth struct {
	// AnyBody lets requests with a body of any content type through to
	// the handlers that take more than JSON (air_passthrough, for provider
	// APIs); the model endpoints (chat, messages, embeddings…) keep their
	// own body policy. Default: false, JSON only (and multipart forms on
	// file uploads).
	AnyBody bool `json:"any_body,omitempty"`

	app *App
	log *zap.Logger
}

// CaddyModule returns the Caddy module information.
func (Auth) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.air_auth",
		New: func() caddy.Module { return new(Auth) },
	}
}

// Provision finds the air app.
func (h *Auth) Provision(ctx caddy.Context) (err error) {
	h.log = ctx.Logger()
	h.app, err = appFrom(ctx)
	return err
}

// ServeHTTP authenticates the request and passes it on.
func (h *Auth) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	requestIDOf(w, r)
	st := h.app.current()
	if st == nil || !st.drain.enter() {
		h.app.observeRefusal(w, r, nil, r.URL.Path, errNotStarted)
		return respondError(w, r, errNotStarted)
	}
	// Every exchange of a key passes here: it keeps the state open until
	// it ends, also when the app stops meanwhile (see drain).
	defer st.drain.leave()
	k, err := st.keys.Authenticate(r.Context(), secretOf(r))
	if err != nil {
		return h.reject(w, r, err)
	}
	caddyhttp.SetVar(r.Context(), varKey, k)
	caddyhttp.SetVar(r.Context(), varUser, k.User)
	caddyhttp.SetVar(r.Context(), varKeyID, k.ID)
	logFields(r, zap.String("air_user", k.User), zap.String("air_key_id", k.ID))
	e := checkClientIP(r, k)
	if e == nil {
		e = readCaller(r, st, k)
	}
	if h.AnyBody {
		caddyhttp.SetVar(r.Context(), varAnyBody, true)
	}
	if e != nil {
		// The key is valid: the refusal names its user.
		h.app.observeRefusal(w, r, nil, r.URL.Path, e)
		return respondError(w, r, e)
	}
	return next.ServeHTTP(w, r)
}

// reject answers a request whose key did not authenticate, with a 401
// shaped as OpenAI's (invalid_request_error, invalid_api_key) or, on
// /v1/messages, Anthropic's (authentication_error). Nothing of the
// presented secret is logged.
func (h *Auth) reject(w http.ResponseWriter, r *http.Request, err error) error {
	var known bool
	for _, e := range []error{keys.ErrMissing, keys.ErrMalformed, keys.ErrUnknown, keys.ErrRevoked, keys.ErrExpired, keys.ErrReplaced} {
		known = known || errors.Is(err, e)
	}
	if !known {
		// A 500; Caddy's error log records the cause.
		return respondError(w, r, fmt.Errorf("authenticating a request: %w", err))
	}
	if ce := h.log.Check(zap.DebugLevel, "rejected API key"); ce != nil {
		ce.Write(zap.String("reason", err.Error()), zap.String("remote", r.RemoteAddr))
	}
	msg := err.Error()
	if errors.Is(err, keys.ErrMissing) && anthropicShaped(r) {
		// Anthropic's clients send their key as x-api-key.
		msg = "missing API key: send it as 'x-api-key: sk-air-…'"
	}
	e := apierror.Unauthorized(msg)
	h.app.observeRefusal(w, r, nil, r.URL.Path, e)
	return respondError(w, r, e)
}

// secretOf returns the API key a request presents.
func secretOf(r *http.Request) string {
	if auth := r.Header.Get("Authorization"); auth != "" {
		scheme, token, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "malformed"
		}
		return strings.TrimSpace(token)
	}
	return strings.TrimSpace(r.Header.Get("x-api-key"))
}

// varAnyBody is the variable air_auth sets when its any_body option is
// on.
const varAnyBody = "air.any_body"

// checkBody is the body policy of the handlers outside the exchange
// pipeline (tasks, images, batches and files, stored responses,
// air_passthrough): checkContentType, unless air_auth's any_body is on.
func checkBody(r *http.Request) *apierror.Error {
	if anyBody, _ := caddyhttp.GetVar(r.Context(), varAnyBody).(bool); anyBody {
		return nil
	}
	return checkContentType(r)
}

// checkContentType requires JSON on requests that carry a body, and
// allows a multipart form on a files upload (POST to a path ending in
// /files) and on the audio transcription and translation paths.
func checkContentType(r *http.Request) *apierror.Error {
	return gateway.CheckContentType(r, multipartPath(r))
}

// multipartPath reports the endpoints whose requests are multipart forms
// (audio transcriptions and translations), the only ones a multipart
// body may reach.
func multipartPath(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasSuffix(p, "/audio/transcriptions") || strings.HasSuffix(p, "/audio/translations") ||
		(r.Method == http.MethodPost && strings.HasSuffix(p, "/files"))
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_auth [<matcher>] [{
//		any_body
//	}]
//
// Keys are managed with `caddy air key …`.
func (h *Auth) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "any_body":
			if d.NextArg() {
				return d.ArgErr()
			}
			h.AnyBody = true
		default:
			return d.Errf("unrecognized air_auth option %q", d.Val())
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Auth)(nil)
	_ caddyhttp.MiddlewareHandler = (*Auth)(nil)
	_ caddyfile.Unmarshaler       = (*Auth)(nil)
)
