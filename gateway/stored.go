package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	dresponses "github.com/caddy-air/caddy-air/dialect/responses"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/reqlog"
	"github.com/caddy-air/caddy-air/responses"
	"github.com/caddy-air/caddy-air/store"
)

// AllowGet is the Allow header of an endpoint that answers GET, and HEAD
// with it.
const AllowGet = "GET, HEAD"

// StoredResponses serves the requests about one stored response of the
// Responses API (GET and DELETE /v1/responses/{id}, POST
// /v1/responses/{id}/cancel, GET /v1/responses/{id}/input_items): each
// goes to the deployment that holds the response, for its user only.
type StoredResponses struct {
	// Host is the server it runs in: the caller, request ids, log
	// fields, refusals.
	Host Host
	// Proxy makes the upstream request.
	Proxy *chatproxy.Proxy
	// Config is the running config's settings: routes, metrics, request
	// log bounds.
	Config *Config
	// Log is the handler's logger.
	Log *zap.Logger
	// CheckBody refuses a request body the gateway does not take (its
	// content type).
	CheckBody func(r *http.Request) *apierror.Error
	// Client names the client for the upstream request
	// (chatproxy.Call.Client).
	Client func(r *http.Request) string
	// Tee returns w teed into c, the capture of a request log.
	Tee func(w http.ResponseWriter, c *reqlog.Capture) http.ResponseWriter
	// Finish writes the held end of an answer (Finish, as the handler
	// returns its error).
	Finish func(w http.ResponseWriter, held *chatproxy.Held, settled error) error
}

// ErrResponseNotFound is OpenAI's answer for a response id it does not
// know, given for ids of other users too.
func ErrResponseNotFound(id string) *apierror.Error {
	return apierror.New(http.StatusNotFound, apierror.TypeInvalidRequest, "", fmt.Sprintf("Response with id '%s' not found.", id))
}

// LookupResponse returns the response id of user's, or a 404.
func LookupResponse(ctx context.Context, st *Shared, user, id string) (responses.Ref, *apierror.Error) {
	var ref responses.Ref
	if st.Repos.Responses == nil || id == "" {
		return ref, ErrResponseNotFound(id)
	}
	b, err := st.Repos.Responses.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ref, ErrResponseNotFound(id)
	case err != nil:
		return ref, ErrStorage
	}
	if ref, err = responses.Decode(b); err != nil || ref.User != user {
		return ref, ErrResponseNotFound(id)
	}
	return ref, nil
}

// refuse answers a request the gateway refuses by itself, counted under
// the request's path.
func (s *StoredResponses) refuse(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, err error) error {
	return s.Host.Refuse(w, r, mr, r.URL.Path, err)
}

// Serve proxies a request about stored response id (sub: "", "cancel"
// or "input_items") to the deployment that holds it.
func (s *StoredResponses) Serve(w http.ResponseWriter, r *http.Request, id, sub string) error {
	method := http.MethodGet
	switch {
	case sub == "cancel":
		method = http.MethodPost
	case sub == "" && r.Method == http.MethodDelete:
		method = http.MethodDelete
	case sub != "" && sub != "input_items":
		return s.refuse(w, r, nil, apierror.NotFound("unknown_url", "Invalid URL ("+r.Method+" "+r.URL.Path+")"))
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		allow := method
		if method == http.MethodGet {
			allow = AllowGet
		}
		w.Header().Set("Allow", allow)
		return s.refuse(w, r, nil, apierror.New(http.StatusMethodNotAllowed, apierror.TypeInvalidRequest, "method_not_allowed", "use "+method+" on this endpoint"))
	}
	d, aerr := s.Host.Caller(r)
	if aerr == nil {
		aerr = s.CheckBody(r)
	}
	if aerr != nil {
		return s.refuse(w, r, nil, aerr)
	}
	key, st, rt := d.Key, d.Shared, d.Services
	ref, aerr := LookupResponse(r.Context(), st, key.User, id)
	if aerr != nil {
		return s.refuse(w, r, nil, aerr)
	}
	if aerr := AllowModel(key, d.Team, ref.Model); aerr != nil {
		return s.refuse(w, r, nil, aerr)
	}
	prov := s.Config.Routes.Provider(ref.Provider)
	a, ok := ref.AttemptOf(prov)
	if !ok {
		return s.refuse(w, r, nil, ErrResponseNotFound(id))
	}
	if method == http.MethodDelete && ref.Unbilled && rt.Responses != nil {
		// Once deleted, a finished response could no longer be billed.
		if ok, err := rt.Responses.SettleIfFinished(r.Context(), id, ref); err != nil {
			s.Log.Warn("billing a background response before its deletion", zap.String("request_id", ref.Record), zap.Error(err))
		} else if ok {
			ref.Unbilled = false
		}
	}
	mr := s.Config.MetricsRoute(ref.Model)
	reservation, aerr := admitStored(r.Context(), &d, ref.Model, method)
	if aerr != nil {
		return s.refuse(w, r, mr, aerr)
	}
	path := "/responses/" + url.PathEscape(id)
	if sub != "" {
		path += "/" + sub
	}
	if r.URL.RawQuery != "" {
		path += "?" + r.URL.RawQuery
	}
	requestID := s.Host.RequestID(w, r)
	var final *reqlog.Capture // the final response, for its request log
	if ref.Unbilled && ref.Log && sub == "" && method == http.MethodGet && s.Config.RequestLogs != nil {
		final = reqlog.NewCapture(s.Config.RequestLogs.Cap)
		w = s.Tee(w, final)
	}
	res := s.Proxy.Serve(w, r, &chatproxy.Call{
		Wire: dresponses.Wire, Provider: prov, Path: path, Method: method,
		Inspected: dialect.Inspected{Model: ref.Model}, ClientHeader: r.Header, RequestID: requestID,
		Client:   s.Client(r),
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
		err = s.billBackground(r.Context(), rt, id, ref, &res)
		if err == nil && final != nil && res.Held != nil { // nil: the client left, nothing written
			// The answer is held until then: log it once written.
			defer func() { BackgroundLogged(st, s.Config.RequestLogs, ref, final.Bytes(), final.Truncated) }()
		}
	}
	s.Host.LogFields(r, zap.String("air_request_id", requestID), zap.String("air_model", ref.Model),
		zap.String("air_provider", ref.Provider), zap.String("air_outcome", res.Outcome))
	status := res.Status
	if err != nil && res.Held != nil {
		status = http.StatusServiceUnavailable // finish answers ledger_unavailable
	}
	if s.Config.Metrics != nil {
		s.Config.Metrics.Count(mr, r.URL.Path, MetricsOutcome(res.Outcome), status)
	}
	return s.Finish(w, res.Held, err)
}

// admitStored admits a retrieval of a stored response (GET, HEAD, and
// input_items), which reaches the provider and bills nothing itself,
// against the key's and its user's rate limits, like count_tokens: nil and
// 429 over them. A spent budget does not refuse it (the response was paid
// for; it then goes through uncounted), and a cancel or a DELETE, which
// ends work, is never refused: both give a nil reservation.
func admitStored(ctx context.Context, d *Deps, model, method string) (*billing.Reservation, *apierror.Error) {
	if method != http.MethodGet {
		return nil, nil
	}
	res, aerr := d.Services.Billing.Admit(ctx, d.Subject, model, billing.Usage{})
	if aerr != nil && aerr.Code != nil && *aerr.Code == "insufficient_quota" {
		return nil, nil
	}
	return res, aerr
}

// billBackground writes the ledger record of a background response that
// res shows finished, under the id of its create's record, and marks the
// mapping billed (responses.Settle): the write is idempotent, so
// concurrent retrievals, and the poller, bill it once.
func (s *StoredResponses) billBackground(ctx context.Context, rt *Services, id string, ref responses.Ref, res *chatproxy.Result) error {
	rec := ref.Finish(res.ResponseStatus, res.Usage, res.Source == billing.SourceReported, res.ServiceTier)
	if err := rt.Responses.Settle(ctx, id, ref, rec); err != nil {
		s.Log.Error("billing a finished background response", zap.String("request_id", ref.Record), zap.Error(err))
		return err
	}
	return nil
}
