package caddymodule

import (
	"fmt"
	"net/http"
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
	dresponses "github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/responses"
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
type Responses struct {
	proxyHandler
	stored *gateway.StoredResponses
}

// CaddyModule returns the Caddy module information.
func (Responses) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.air_responses", New: func() caddy.Module { return new(Responses) }}
}

// Provision sets the handler up for the Responses API.
func (h *Responses) Provision(ctx caddy.Context) error {
	err := h.provision(ctx, gateway.Endpoint{
		Name: billing.EndpointResponses, Path: "/responses", Kind: providers.KindChat,
		Wire:   gateway.Wire{Protocol: dresponses.Wire, Inspect: dresponses.InspectResponses},
		Client: translate.Responses,
		Pin:    h.pinned, Settle: h.remember,
	})
	if err != nil {
		return err
	}
	h.stored = &gateway.StoredResponses{Host: exchangeHost{h.app}, Proxy: h.proxy, Config: &h.app.cfg, Log: h.log,
		CheckBody: checkBody, Client: clientOf, Tee: teeTo,
		Finish: func(w http.ResponseWriter, held *chatproxy.Held, settled error) error {
			return h.finish(w, nil, held, settled)
		}}
	return nil
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
	return h.stored.Serve(w, r, id, sub)
}

// pinned returns the only attempt of a create that continues a previous
// response: the deployment that holds it. Chat and messages are not
// pinned.
func (h *Responses) pinned(x *gateway.Exchange) ([]providers.Attempt, *apierror.Error) {
	ctx, st, key, in, route := x.R.Context(), x.Deps.Shared, x.Deps.Key, x.In, x.Route
	if in.PreviousResponseID == "" {
		return nil, nil
	}
	ref, aerr := gateway.LookupResponse(ctx, st, key.User, in.PreviousResponseID)
	if aerr == gateway.ErrStorage {
		return nil, aerr
	}
	if aerr == nil && !key.Allows(ref.Model) {
		// A response of a model outside the key's scope is not the key's
		// to continue: it answers as one that does not exist.
		aerr = gateway.ErrResponseNotFound(in.PreviousResponseID)
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
