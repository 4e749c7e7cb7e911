package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
)

// refusingHost is a Host whose callers are all refused with err; it
// records the refusals it answered.
type refusingHost struct {
	err      *apierror.Error
	refused  []int
	endpoint string
	callers  int
}

func (h *refusingHost) Caller(*http.Request) (Deps, *apierror.Error) {
	h.callers++
	return Deps{}, h.err
}
func (h *refusingHost) ReadBody(http.ResponseWriter, *http.Request, int64) (Body, error) {
	return nil, errors.New("not reached")
}
func (h *refusingHost) StartLog(*http.Request, *Deps, []byte, time.Time) RequestLog { return nil }
func (h *refusingHost) RequestID(http.ResponseWriter, *http.Request) string         { return "req_1" }
func (h *refusingHost) LogFields(*http.Request, ...zap.Field)                       {}
func (h *refusingHost) Refuse(w http.ResponseWriter, _ *http.Request, _ *airmetrics.Route, endpoint string, err error) error {
	var e *apierror.Error
	if !errors.As(err, &e) {
		e = apierror.Internal()
	}
	h.refused, h.endpoint = append(h.refused, e.Status), endpoint
	e.Write(w)
	return &StatusError{Status: e.Status, Err: err}
}

// TestExchangeRefusesBeforeReading checks the body policy and the method,
// checked before the caller is looked up and the body read: a body that
// is not JSON gets 415 (a multipart form only where the endpoint takes
// one), another method than POST 405 with Allow, each counted as a
// refusal of the endpoint; a refused caller's error is answered as it
// is.
func TestExchangeRefusesBeforeReading(t *testing.T) {
	notReady := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "not_ready", "starting")
	for i, tc := range []struct {
		multipart   bool
		method, ct  string
		status      int
		allow       string
		callerAsked bool
	}{
		{false, http.MethodPost, "text/plain", http.StatusUnsupportedMediaType, "", false},
		{false, http.MethodPost, "multipart/form-data; boundary=x", http.StatusUnsupportedMediaType, "", false},
		{true, http.MethodPost, "multipart/form-data; boundary=x", http.StatusServiceUnavailable, "", true},
		{true, http.MethodPost, "application/json", http.StatusServiceUnavailable, "", true},
		{false, http.MethodPost, "application/json; charset=utf-8", http.StatusServiceUnavailable, "", true},
		{false, http.MethodPut, "application/json", http.StatusMethodNotAllowed, http.MethodPost, false},
		{false, http.MethodGet, "text/plain", http.StatusUnsupportedMediaType, "", false},
	} {
		host := &refusingHost{err: notReady}
		var form *MultipartForm
		if tc.multipart {
			form = &MultipartForm{}
		}
		e := &Engine{Endpoint: Endpoint{Name: "moderations", Body: BodyPolicy{Multipart: form}}, Host: host}
		r := httptest.NewRequest(tc.method, "/v1/moderations", strings.NewReader(`{"model":"m"}`))
		r.Header.Set("Content-Type", tc.ct)
		w := httptest.NewRecorder()
		err := e.Serve(w, r)
		var se *StatusError
		if !errors.As(err, &se) || se.Status != tc.status || w.Code != tc.status || w.Header().Get("Allow") != tc.allow {
			t.Errorf("Test %d: error %v, answer %d Allow %q; want %d Allow %q", i, err, w.Code, w.Header().Get("Allow"), tc.status, tc.allow)
		}
		if len(host.refused) != 1 || host.endpoint != "moderations" || (host.callers > 0) != tc.callerAsked {
			t.Errorf("Test %d: refusals %v of %q, caller asked %d times", i, host.refused, host.endpoint, host.callers)
		}
	}
}
