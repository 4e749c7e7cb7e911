package gateway

import (
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/routing"
)

// StatusError is an error the engine returns with the status its answer
// had, for the host's error log and error routes (caddyhttp.Error).
type StatusError struct {
	// Status is the answer's HTTP status.
	Status int
	// Err is the cause, for the error log.
	Err error
}

// Error implements error.
func (e *StatusError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *StatusError) Unwrap() error { return e.Err }

// settle bills an exchange an upstream saw: the record made durable (or
// deferred by the endpoint's Settle hook) before the engine writes the
// held end of the answer, or an error in its place.
func (x *Exchange) settle() error {
	res, rec := &x.Result, &x.Record
	if !res.Reached && !res.Wrote {
		// No upstream saw the request: nothing to bill.
		x.Reservation.Release()
		x.LogFields(zap.String("air_request_id", x.RequestID), zap.String("air_model", x.In.Model), zap.String("air_outcome", res.Outcome))
		x.q.Outcome, x.q.Status, x.q.User, x.q.KeyID = MetricsOutcome(res.Outcome), res.Status, x.Deps.Key.User, x.Deps.Key.ID
		return x.finishTranslated(nil)
	}
	rec.Usage, rec.Source, rec.Status, rec.Outcome = res.Usage, res.Source, res.Status, res.Outcome
	if usage := x.e.Endpoint.Billing.Usage; usage != nil && res.Status < 400 {
		rec.Usage, rec.Source = usage(x.In, res)
	}
	rec.ServiceTier = res.ServiceTier
	ServedBy(rec, res.Target)
	if hook := x.e.Endpoint.Settle; hook != nil && hook(x) {
		x.LogFields(zap.String("air_request_id", x.RequestID), zap.String("air_model", x.In.Model), zap.String("air_outcome", "deferred"))
		err := x.finishTranslated(nil)
		x.finishLog()
		return err
	}
	rec.DurationMillis = DurationMillis(SinceStart(x.Arrived))
	var err error
	*rec, err = x.Reservation.SettleDurable(x.R.Context(), *rec, LedgerWait)
	x.LogFields(
		zap.String("air_request_id", x.RequestID),
		zap.String("air_model", x.In.Model),
		zap.String("air_provider", rec.Provider),
		zap.String("air_deployment", rec.Deployment),
		zap.Int64("air_prompt_tokens", res.Usage.PromptTotal()),
		zap.Int64("air_output_tokens", res.Usage.Output),
		zap.String("air_usage_source", string(res.Source)),
		zap.String("air_cost", rec.Cost.String()),
		zap.String("air_outcome", rec.Outcome), // res.Outcome, or withheld
	)
	x.q = airmetrics.Request{
		Outcome: MetricsOutcome(res.Outcome), Status: res.Status,
		Tokens: airmetrics.Tokens{Input: rec.Usage.Input, Output: rec.Usage.Output, CacheRead: rec.Usage.CacheRead,
			CacheCreation: rec.Usage.CacheCreation, Reasoning: rec.Usage.Reasoning},
		Currency: rec.Currency, CostNanos: int64(rec.Cost), Unpriced: rec.Unpriced, User: x.Deps.Key.User, KeyID: x.Deps.Key.ID,
	}
	if !res.FirstByte.IsZero() {
		x.q.FirstByte = res.FirstByte.Sub(x.Arrived)
	}
	if err != nil && x.R.Context().Err() == nil {
		x.q.Status = http.StatusServiceUnavailable // finish answers ledger_unavailable
		x.e.Log.Error("the ledger did not make a request's record durable in time; the client gets an error instead of the end of its answer",
			zap.String("request_id", x.RequestID), zap.Error(err))
	}
	err = x.finishTranslated(err)
	x.finishLog()
	return err
}

// finishLog queues the request log, when kept, under the record's id.
func (x *Exchange) finishLog() {
	if x.log != nil {
		x.log.Finish(x.RequestID, x.Record.Team)
	}
}

// finishTranslated ends the answer as Finish does, through the writer
// that wrote it, and then, for a translated one, writes its translated
// end.
func (x *Exchange) finishTranslated(settled error) error {
	res := &x.Result
	err := Finish(res.Writer, res.Held, settled, x.e.Endpoint.Name)
	if tw, ok := res.Writer.(*translate.Writer); ok {
		tw.Close()
	}
	return err
}

// Finish writes the held end of a response: as it is once its record is
// durable (settled nil), or an error instead. An error status is also
// returned, as a *StatusError, for the host's error log and error routes.
// A client whose answer cannot be ended aborts the handler
// (http.ErrAbortHandler).
func Finish(w http.ResponseWriter, held *chatproxy.Held, settled error, endpoint string) error {
	if held == nil {
		return nil // the client left
	}
	if settled != nil {
		e := apierror.New(http.StatusServiceUnavailable, apierror.TypeServer, "ledger_unavailable",
			"the answer could not be recorded in time, so it is withheld; retry shortly")
		if !held.Fail(w, e) {
			panic(http.ErrAbortHandler)
		}
		return &StatusError{Status: e.Status, Err: e}
	}
	if held.Broken() {
		panic(http.ErrAbortHandler)
	}
	held.Release(w)
	if s := held.Status(); s >= 400 {
		return &StatusError{Status: s, Err: fmt.Errorf("%s upstream answered %d", endpoint, s)}
	}
	return nil
}

// serveUnbilled proxies an admitted request that leaves no ledger record:
// its reservation keeps the request counted against the rate limits once
// an upstream saw it, and is given back whole otherwise.
func (x *Exchange) serveUnbilled() error {
	ep, start := &x.e.Endpoint, time.Now()
	x.Result = x.e.Proxy.Serve(x.W, x.R, x.call())
	x.proxied = true
	res := &x.Result
	if res.Reached || res.Wrote {
		x.Reservation.ReleaseCost()
	} else {
		x.Reservation.Release()
	}
	x.LogFields(zap.String("air_request_id", x.RequestID), zap.String("air_model", x.In.Model),
		zap.String("air_provider", res.Provider), zap.String("air_outcome", res.Outcome))
	x.Metrics.Observe(&airmetrics.Request{Endpoint: ep.Name, Outcome: MetricsOutcome(res.Outcome),
		Status: res.Status, Duration: SinceStart(start)})
	return Finish(x.W, res.Held, nil, ep.Name)
}

// ServedBy records in rec the deployment that answered, and the model
// that served it when it was a fallback.
func ServedBy(rec *billing.Record, t *routing.Target) {
	if t == nil {
		return
	}
	rec.Provider, rec.Deployment = t.Provider.Name, t.Deployment()
	if t.Fallback {
		rec.ServedModel = t.Route.Pattern
	}
}

// MetricsOutcome maps a chatproxy or ledger outcome to a metrics outcome.
func MetricsOutcome(outcome string) string {
	switch outcome {
	case airmetrics.OutcomeOK, airmetrics.OutcomePartial, airmetrics.OutcomeCanceled, airmetrics.OutcomeTimeout:
		return outcome
	}
	return airmetrics.OutcomeUpstreamError
}
