package caddymodule

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/gemini"
	"github.com/caddy-air/caddy-air/dialect/translate"
	"github.com/caddy-air/caddy-air/providers"
)

// TokenCountHeader marks a count_tokens answer that is the gateway's own
// estimate (its value is "estimate"), not the provider's count.
const TokenCountHeader = "X-Air-Token-Count"

// Limits of a Google countTokens exchange (countTimeout when the provider
// sets no timeout).
const (
	countTimeout = 60 * time.Second
	maxCountBody = 1 << 20
)

// countTokens answers a count_tokens request for a model whose provider
// does not speak Messages: Gemini's countTokens for a gemini or vertex
// model, else (openai, azure, bedrock, dashscope) the prompt estimate the
// gateway admits requests on, marked by TokenCountHeader. Either way the
// request counts against the rate limits, and leaves no ledger record.
func countTokens(h *proxyHandler, w http.ResponseWriter, r *http.Request, body []byte, in dialect.Inspected,
	route *providers.Route, reservation *billing.Reservation) error {
	wire := wireOf(route)
	if wire != translate.Gemini && wire != translate.Vertex {
		reservation.ReleaseCost()
		logFields(r, zap.String("air_model", in.Model), zap.String("air_outcome", "estimate"))
		w.Header().Set(TokenCountHeader, "estimate")
		return writeCount(w, dialect.EstimateRequest(in, 0).Input)
	}
	start := time.Now()
	n, err := h.countGoogle(r.Context(), body, wire, route)
	var de *dialect.Error
	if err != nil && !errors.As(err, &de) {
		reservation.Release() // no upstream answered it
		return h.refuse(w, r, h.app.metrics.Route(route.Pattern), err)
	}
	// The provider answered: a count, or its refusal.
	reservation.ReleaseCost()
	outcome, status := airmetrics.OutcomeOK, http.StatusOK
	if de != nil {
		outcome, status = airmetrics.OutcomeUpstreamError, de.Status
	}
	logFields(r, zap.String("air_model", in.Model), zap.String("air_provider", route.Provider.Name), zap.String("air_outcome", outcome))
	h.app.metrics.Route(route.Pattern).Observe(&airmetrics.Request{Endpoint: h.spec.endpoint, Outcome: outcome, Status: status, Duration: sinceStart(start)})
	if de != nil {
		if de.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((de.RetryAfter+time.Second-1)/time.Second)))
		}
		status, b := anthropic.Codec{}.EncodeError(de)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return caddyhttp.Error(status, fmt.Errorf("count_tokens upstream answered %d", status))
	}
	return writeCount(w, n)
}

// writeCount writes Anthropic's count_tokens answer.
func writeCount(w http.ResponseWriter, n int64) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(append(strconv.AppendInt([]byte(`{"input_tokens":`), n, 10), '}'))
	return err
}

// countGoogle asks the route's gemini or vertex provider to count the
// Messages request body's tokens: the body is translated as for
// generateContent, then sent to the model's countTokens method with the
// provider's auth (Vertex AI takes the contents, system instruction and
// tools; Google AI Studio the whole generateContentRequest). It returns
// an *apierror.Error for a request it cannot translate or send, and a
// *dialect.Error for the provider's refusal.
func (h *proxyHandler) countGoogle(ctx context.Context, body []byte, wire string, route *providers.Route) (int64, error) {
	x, err := translate.For(translate.Messages, wire).Request(body, translate.Options{DropParams: true, MaxTokens: 1})
	if err != nil {
		return 0, translationError(err)
	}
	model := x.Model(route.UpstreamModel)
	gb, err := x.Body(route.UpstreamModel)
	if err != nil {
		return 0, translationError(err)
	}
	var cb []byte
	if wire == translate.Gemini {
		if gb, err = sjson.SetBytes(gb, "model", "models/"+model); err == nil {
			cb, err = sjson.SetRawBytes([]byte("{}"), "generateContentRequest", gb)
		}
	} else {
		cb = []byte("{}")
		for _, f := range []string{"contents", "systemInstruction", "tools"} {
			if v := gjson.GetBytes(gb, f); v.Exists() && err == nil {
				cb, err = sjson.SetRawBytes(cb, f, []byte(v.Raw))
			}
		}
	}
	if err != nil {
		return 0, err
	}
	if route.Provider.Endpoint == nil || len(route.Provider.BaseURLs) == 0 {
		return 0, apierror.Internal()
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(route.Provider.Timeout, countTimeout))
	defer cancel()
	req, err := route.Provider.Endpoint.NewRequest(ctx, countAttempt(route), model, false, cb)
	if err != nil {
		h.log.Error("building a countTokens request", zap.String("provider", route.Provider.Name), zap.Error(err))
		return 0, apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_unreachable", "the provider's countTokens could not be reached")
	}
	path, ok := strings.CutSuffix(req.URL.Path, ":generateContent")
	if !ok {
		return 0, apierror.Internal()
	}
	req.URL.Path, req.URL.RawPath = path+":countTokens", ""
	resp, err := h.app.Transport().RoundTrip(req)
	if err != nil {
		h.log.Warn("countTokens upstream", zap.String("provider", route.Provider.Name), zap.Error(err))
		return 0, apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_unreachable", "the provider's countTokens could not be reached")
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxCountBody))
	if err != nil {
		return 0, apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_error", "the provider's countTokens answer was cut")
	}
	if resp.StatusCode != http.StatusOK {
		e := gemini.Codec{}.DecodeError(resp.StatusCode, resp.Header, rb)
		if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
			// The gateway's credentials, not the client's key: a 502.
			h.log.Warn("countTokens upstream refused the provider's credentials", zap.String("provider", route.Provider.Name), zap.Int("status", e.Status))
			e = &dialect.Error{Status: http.StatusBadGateway, Kind: dialect.ErrServer, Message: "the provider refused the gateway's credentials"}
		}
		return 0, e
	}
	n := gjson.GetBytes(rb, "totalTokens")
	if n.Type != gjson.Number || n.Int() < 0 {
		return 0, apierror.New(http.StatusBadGateway, apierror.TypeServer, "upstream_error", "the provider's countTokens answer has no totalTokens")
	}
	return n.Int(), nil
}

// countAttempt is where a count goes: the provider's first base URL, with
// the first key the model's first deployment may use.
func countAttempt(route *providers.Route) providers.Attempt {
	p := route.Provider
	a := providers.Attempt{BaseURL: strings.TrimSuffix(p.BaseURLs[0], "/")}
	k := 0
	if len(route.Deployments) > 0 && route.Deployments[0].Provider == p && len(route.Deployments[0].Keys) > 0 {
		k = route.Deployments[0].Keys[0]
	}
	if k < len(p.APIKeys) {
		a.APIKey = p.APIKeys[k]
	}
	return a
}
