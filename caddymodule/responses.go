package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	dresponses "github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/store"
)

func init() {
	caddy.RegisterModule(Responses{})
	httpcaddyfile.RegisterHandlerDirective("air_responses", parseHandler[Responses])
	httpcaddyfile.RegisterDirectiveOrder("air_responses", httpcaddyfile.Before, "respond")
}

// Responses is the `air_responses` handler: OpenAI's Responses API.
// `POST /v1/responses` is proxied like chat (same edits, retries, ledger
// record and durability hold), and the id of the response it creates is
// mapped to the user, provider, deployment (base URL and key) and model
// that created it, for responseTTL. `GET` and `DELETE
// /v1/responses/{id}`, `POST /v1/responses/{id}/cancel` and `GET
// /v1/responses/{id}/input_items` go to that deployment only, for that
// user only (anyone else gets 404), as does a create that continues a
// response (previous_response_id). A background response holds its
// create's reservation while it runs (responses.Hold) and is billed, in
// its place, when a retrieval (or a cancel) shows it finished, or when
// the poller (responses.Poller) does, whichever comes first; a delete of
// an unbilled one first retrieves it, to bill it if it finished.
type Responses struct{ proxyHandler }

// CaddyModule returns the Caddy module information.
func (Responses) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_responses", New: func() caddy.Module { return new(Responses) }}
}

// Provision sets the handler up for the Responses API.
func (h *Responses) Provision(ctx caddy.Context) error {
	return h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointResponses, Path: "/responses", Kind: providers.KindChat,
		Wire:   gateway.Wire{Protocol: dresponses.Wire, Inspect: dresponses.InspectResponses},
		Client: translate.Responses,
		Pin:    h.pinned, Settle: h.remember,
	})
}

// ServeHTTP serves a create (POST on the path ending in /responses) or a
// request about one stored response (the path's /responses/{id}[/sub]).
func (h *Responses) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	i := strings.LastIndex(r.URL.Path, "/responses")
	rest := ""
	if i >= 0 {
		rest = r.URL.Path[i+len("/responses"):]
	}
	if rest == "" || rest == "/" {
		return handlerError(h.engine.Serve(w, r))
	}
	id, sub, _ := strings.Cut(rest[1:], "/")
	return h.serveStored(w, r, id, sub)
}

// errResponseNotFound is OpenAI's answer for a response id it does not
// know, given for ids of other users too.
func errResponseNotFound(id string) *apierror.Error {
	return apierror.New(http.StatusNotFound, apierror.TypeInvalidRequest, "", fmt.Sprintf("Response with id '%s' not found.", id))
}

// lookup returns the response id of user's, or a 404.
func lookup(ctx context.Context, st *gateway.Shared, user, id string) (responses.Ref, *apierror.Error) {
	var ref responses.Ref
	if st.Repos.Responses == nil || id == "" {
		return ref, errResponseNotFound(id)
	}
	b, err := st.Repos.Responses.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ref, errResponseNotFound(id)
	case err != nil:
		return ref, gateway.ErrStorage
	}
	if ref, err = responses.Decode(b); err != nil || ref.User != user {
		return ref, errResponseNotFound(id)
	}
	return ref, nil
}

// pinned returns the only attempt of a create that continues a previous
// response: the deployment that holds it. Chat and messages are not
// pinned.
func (h *Responses) pinned(x *gateway.Exchange) ([]providers.Attempt, *apierror.Error) {
	ctx, st, key, in, route := x.R.Context(), x.Deps.Shared, x.Deps.Key, x.In, x.Route
	if in.PreviousResponseID == "" {
		return nil, nil
	}
	ref, aerr := lookup(ctx, st, key.User, in.PreviousResponseID)
	if aerr == gateway.ErrStorage {
		return nil, aerr
	}
	if aerr == nil && !key.Allows(ref.Model) {
		// A response of a model outside the key's scope is not the key's
		// to continue: it answers as one that does not exist.
		aerr = errResponseNotFound(in.PreviousResponseID)
	}
	if aerr != nil {
		return nil, apierror.NotFound("previous_response_not_found",
			fmt.Sprintf("Previous response with id '%s' not found.", in.PreviousResponseID)).WithParam("previous_response_id")
	}
	if ref.Provider != route.Provider.Name {
		return nil, apierror.InvalidRequest("model", fmt.Sprintf("the previous response is held by provider %q, which does not serve model %q", ref.Provider, in.Model))
	}
	a, ok := ref.AttemptOf(route.Provider)
	if !ok {
		return nil, apierror.NotFound("previous_response_not_found", "the deployment that holds the previous response is no longer configured").WithParam("previous_response_id")
	}
	return []providers.Attempt{a}, nil
}

// remember maps the id of the response a create made, and reports whether
// its billing waits for its completion: a background response whose
// usage the answer did not report, which is then registered pending for
// the poller (responses.Poller), and whose reservation res is then held
// until it is billed (or given back if it is billed elsewhere or gone).
// It is called before the answer's end is released, so that a client
// never holds an id the gateway cannot route, and a response the gateway
// defers is always polled.
func (h *Responses) remember(x *gateway.Exchange) (deferred bool) {
	ctx, st, rt, rec, in, res := x.R.Context(), x.Deps.Shared, x.Deps.Services, &x.Record, x.In, &x.Result
	reservation, logged := x.Reservation, x.Logged()
	if res.ResponseID == "" || st.Repos.Responses == nil {
		return false
	}
	ref := responses.Ref{User: rec.User, KeyID: rec.KeyID, Provider: rec.Provider, BaseURL: res.Attempt.BaseURL, Key: -1,
		Model: rec.Model, Record: rec.ID, Created: rec.Time}
	if prov := h.app.Routes().Provider(rec.Provider); prov != nil && res.Attempt.APIKey != "" {
		ref.Key = slices.Index(prov.APIKeys, res.Attempt.APIKey)
	}
	ref.Unbilled = in.Background && res.Source != billing.SourceReported && res.Status < 300 &&
		(res.ResponseStatus == "queued" || res.ResponseStatus == "in_progress") && rt.Responses != nil
	ref.Log = ref.Unbilled && logged
	if !ref.Unbilled {
		if err := st.Repos.Responses.Put(ctx, res.ResponseID, ref.Encode(), responses.TTL); err != nil {
			h.log.Error("storing a response id; its retrieval through the gateway will answer 404",
				zap.String("request_id", rec.ID), zap.Error(err))
		}
		return false
	}
	// The poller bills the response under rec.ID: no interrupted record
	// may take that id.
	reservation.Defer()
	err := st.Repos.Responses.PutPending(ctx, res.ResponseID, ref.Encode(), responses.TTL, rt.Responses.FirstPoll(time.Now()))
	if err != nil {
		h.log.Error("storing a response id; its retrieval through the gateway will answer 404",
			zap.String("request_id", rec.ID), zap.Error(err))
		return false // billed now, on what is known
	}
	rt.Responses.Hold(res.ResponseID, rt.Hold(reservation))
	return true
}

// serveStored proxies a request about stored response id (sub: "",
// "cancel" or "input_items") to the deployment that holds it.
func (h *Responses) serveStored(w http.ResponseWriter, r *http.Request, id, sub string) error {
	method := http.MethodGet
	switch {
	case sub == "cancel":
		method = http.MethodPost
	case sub == "" && r.Method == http.MethodDelete:
		method = http.MethodDelete
	case sub != "" && sub != "input_items":
		return h.app.refuseRead(w, r, nil, apierror.NotFound("unknown_url", "Invalid URL ("+r.Method+" "+r.URL.Path+")"))
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		allow := method
		if method == http.MethodGet {
			allow = allowGet
		}
		w.Header().Set("Allow", allow)
		return h.app.refuseRead(w, r, nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use "+method+" on this endpoint"))
	}
	key, st, rt, aerr := h.app.caller(r)
	if aerr == nil {
		aerr = checkBody(r)
	}
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	ref, aerr := lookup(r.Context(), st, key.User, id)
	if aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	if aerr := allowModel(r, key, ref.Model); aerr != nil {
		return h.app.refuseRead(w, r, nil, aerr)
	}
	prov := h.app.Routes().Provider(ref.Provider)
	a, ok := ref.AttemptOf(prov)
	if !ok {
		return h.app.refuseRead(w, r, nil, errResponseNotFound(id))
	}
	if method == http.MethodDelete && ref.Unbilled && rt.Responses != nil {
		// Once deleted, a finished response could no longer be billed.
		if ok, err := rt.Responses.SettleIfFinished(r.Context(), id, ref); err != nil {
			h.log.Warn("billing a background response before its deletion", zap.String("request_id", ref.Record), zap.Error(err))
		} else if ok {
			ref.Unbilled = false
		}
	}
	mr := h.app.cfg.MetricsRoute(ref.Model)
	reservation, aerr := admitStored(r, rt, key, ref.Model, method)
	if aerr != nil {
		return h.app.refuseRead(w, r, mr, aerr)
	}
	path := "/responses/" + url.PathEscape(id)
	if sub != "" {
		path += "/" + sub
	}
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	requestID := requestIDOf(w, r)
	var final *reqlog.Capture // the final response, for its request log
	if ref.Unbilled && ref.Log && sub == "" && method == http.MethodGet && h.app.cfg.RequestLogs != nil {
		final = reqlog.NewCapture(h.app.cfg.RequestLogs.Cap)
		w = &teeWriter{ResponseWriterWrapper: &caddyhttp.ResponseWriterWrapper{ResponseWriter: w}, c: final}
	}
	res := h.proxy.Serve(w, r, &chatproxy.Call{
		Wire: dresponses.Wire, Provider: prov, Path: path, Method: method,
		Inspected: dialect.Inspected{Model: ref.Model}, ClientHeader: r.Header, RequestID: requestID,
		Client:   clientOf(r),
		Attempts: []providers.Attempt{a},
	})
	defer res.Close()
	if reservation != nil && (res.Reached || res.Wrote) {
		reservation.ReleaseCost()
	} else if reservation != nil {
		reservation.Release()
	}
	var err error
	if ref.Unbilled && sub != "input_items" && responses.Finished(res.ResponseStatus) {
		err = h.billBackground(r.Context(), rt, id, ref, &res)
		if err == nil && final != nil && res.Held != nil { // nil: the client left, nothing written
			// The answer is held until then: log it once written.
			defer func() { gateway.BackgroundLogged(st, h.app.cfg.RequestLogs, ref, final.Bytes(), final.Truncated) }()
		}
	}
	logFields(r, zap.String("air_request_id", requestID), zap.String("air_model", ref.Model),
		zap.String("air_provider", ref.Provider), zap.String("air_outcome", res.Outcome))
	status := res.Status
	if err != nil && res.Held != nil {
		status = http.StatusServiceUnavailable // finish answers ledger_unavailable
	}
	h.app.countRead(r, mr, metricsOutcome(res.Outcome), status)
	return h.finish(w, r, res.Held, err)
}

// admitStored admits a retrieval of a stored response (GET, HEAD, and
// input_items), which reaches the provider and bills nothing itself,
// against the key's and its user's rate limits, like count_tokens: nil and
// 429 over them. A spent budget does not refuse it (the response was paid
// for; it then goes through uncounted), and a cancel or a DELETE, which
// ends work, is never refused: both give a nil reservation.
func admitStored(r *http.Request, rt *gateway.Services, key *keys.Key, model, method string) (*billing.Reservation, *apierror.Error) {
	if method != http.MethodGet {
		return nil, nil
	}
	res, aerr := rt.Billing.Admit(r.Context(), subjectOf(r, key), model, billing.Usage{})
	if aerr != nil && aerr.Code != nil && *aerr.Code == "insufficient_quota" {
		return nil, nil
	}
	return res, aerr
}

// billBackground writes the ledger record of a background response that
// res shows finished, under the id of its create's record, and marks the
// mapping billed (responses.Settle): the write is idempotent, so
// concurrent retrievals, and the poller, bill it once.
func (h *Responses) billBackground(ctx context.Context, rt *gateway.Services, id string, ref responses.Ref, res *chatproxy.Result) error {
	rec := ref.Finish(res.ResponseStatus, res.Usage, res.Source == billing.SourceReported, res.ServiceTier)
	if err := rt.Responses.Settle(ctx, id, ref, rec); err != nil {
		h.log.Error("billing a finished background response", zap.String("request_id", ref.Record), zap.Error(err))
		return err
	}
	return nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	air_responses [<matcher>]
//
// Mount it on the Responses API's paths, e.g. `air_responses
// /v1/responses*`. Providers and models are configured in the global
// `air` option.
func (h *Responses) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	return h.proxyHandler.UnmarshalCaddyfile(d)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Responses)(nil)
	_ caddyhttp.MiddlewareHandler = (*Responses)(nil)
	_ caddyfile.Unmarshaler       = (*Responses)(nil)
)
