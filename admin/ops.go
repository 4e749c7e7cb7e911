package admin

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/refusals"
	"github.com/caddy-air/caddy-air/routing"
	"github.com/caddy-air/caddy-air/store"
)

// PricesReport is the answer of GET /air/prices: the price table as
// loaded.
type PricesReport struct {
	// Source is the price file ("" when none is configured: every model
	// is unpriced).
	Source string `json:"source"`
	// Currency is the file's default currency.
	Currency string `json:"currency"`
	// Models are the models and their prices, exact ids first, then
	// globs.
	Models []billing.ModelPrices `json:"models"`
}

// ProvidersReport is the answer of GET /air/providers.
type ProvidersReport struct {
	// Upstreams is the state of every upstream (deployment × base URL ×
	// key) of the running config, by provider, deployment, base URL and
	// key index. Keys themselves are never shown.
	Upstreams []routing.UpstreamStatus `json:"upstreams"`
}

// handleHealth answers GET /air/health: 200 while the gateway serves, 503
// with the failing checks otherwise.
func (a API) handleHealth(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return notAllowed(r)
	}
	s, err := a.started()
	if err != nil {
		return err
	}
	rep, status := s.Health.Report(r.Context())
	return writeJSON(w, status, rep)
}

// handleProviders answers GET /air/providers: the routing state of every
// upstream of the running config (breaker, cooldown, requests in flight,
// latency).
func (a API) handleProviders(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return notAllowed(r)
	}
	ups, err := a.Gateway.Upstreams()
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	return writeJSON(w, http.StatusOK, ProvidersReport{Upstreams: ups})
}

// handlePrices answers GET /air/prices: the price table of the running
// config, as the console's operators' page shows it.
func (a API) handlePrices(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return notAllowed(r)
	}
	rep, err := a.Gateway.Prices()
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	if rep.Models == nil {
		rep.Models = []billing.ModelPrices{}
	}
	return writeJSON(w, http.StatusOK, rep)
}

// handleRefusals serves GET /air/refusals: the requests this instance
// refused by itself, newest first, selected by id, user and limit.
func (a API) handleRefusals(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return notAllowed(r)
	}
	q := r.URL.Query()
	f := refusals.Filter{ID: q.Get("id"), User: q.Get("user")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return apiErr(http.StatusBadRequest, fmt.Errorf("limit: want a whole number, got %q", s))
		}
		f.Limit = n
	}
	return writeJSON(w, http.StatusOK, a.Gateway.Refusals(f))
}

// handleAlerts answers GET /air/alerts[?limit=n]: the deliveries of the
// newest alerts (default 100, at most 1000), newest first.
func (a API) handleAlerts(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return notAllowed(r)
	}
	s, err := a.started()
	if err != nil {
		return err
	}
	n := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		if n, err = strconv.Atoi(v); err != nil || n < 1 || n > 1000 {
			return apiErr(http.StatusBadRequest, fmt.Errorf("limit: want 1 to 1000, got %q", v))
		}
	}
	ds, err := s.Alerts.Recent(r.Context(), n)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	if ds == nil {
		ds = []store.AlertDelivery{}
	}
	return writeJSON(w, http.StatusOK, ds)
}

// errNoRequestLog answers a request log that is not kept.
var errNoRequestLog = errors.New("no such request log")

// handleRequestLog answers GET /air/request-logs/<record id>.
func (a API) handleRequestLog(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiErr(http.StatusMethodNotAllowed, errors.New("use GET"))
	}
	s, err := a.started()
	if err != nil {
		return err
	}
	id := strings.TrimPrefix(r.URL.Path, "/air/request-logs/")
	if id == "" || strings.Contains(id, "/") || s.RequestLogs == nil {
		return apiErr(http.StatusNotFound, errNoRequestLog)
	}
	l, err := s.RequestLogs.Get(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return apiErr(http.StatusNotFound, errNoRequestLog)
	}
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeJSON(w, http.StatusOK, l)
}
