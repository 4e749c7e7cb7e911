package caddymodule

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/airmetrics"
	"github.com/caddy-air/caddy-air/refusals"
)

// varRequestID is the variable that holds a request's gateway id.
const varRequestID = "air.request_id"

// requestIDOf returns r's gateway request id: made once, by air_auth or
// the first handler that asks, and sent to the client as X-Request-Id
// (read by OpenAI's SDKs) and Request-Id (read by Anthropic's). It names
// the request's ledger record, or its entry in the refusals log. The
// provider's own ids reach the client as X-Upstream-Request-Id and
// Upstream-Request-Id.
func requestIDOf(w http.ResponseWriter, r *http.Request) string {
	if id, ok := caddyhttp.GetVar(r.Context(), varRequestID).(string); ok && id != "" {
		return id
	}
	id := newRequestID()
	caddyhttp.SetVar(r.Context(), varRequestID, id)
	h := w.Header()
	h.Set("X-Request-Id", id)
	h.Set("Request-Id", id)
	return id
}

// refusalLogSize is how many refusals the process keeps: at about 300
// bytes each, some 300 KB.
const refusalLogSize = 1000

// recentRefusals are the last requests this process refused by itself;
// they survive reloads, not restarts.
var recentRefusals = refusals.New(refusalLogSize)

// maxRefusalMessage bounds the message a refusal keeps, in bytes: a 404's
// names the path, which the client chose.
const maxRefusalMessage = 300

// clip cuts s to at most n bytes, at a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// recordRefusal keeps a refusal of r in recentRefusals and names it in
// the access log.
func recordRefusal(w http.ResponseWriter, r *http.Request, mr *airmetrics.Route, endpoint string, status int, code, msg string) {
	id := requestIDOf(w, r)
	user, _ := caddyhttp.GetVar(r.Context(), varUser).(string)
	keyID, _ := caddyhttp.GetVar(r.Context(), varKeyID).(string)
	e := refusals.Entry{ID: id, Time: time.Now().UTC(), User: user, KeyID: keyID, Endpoint: airmetrics.Endpoint(endpoint),
		Status: status, Code: code, Message: clip(msg, maxRefusalMessage)}
	if mr != nil {
		e.Model = mr.Model()
	}
	recentRefusals.Add(e)
	logFields(r, zap.String("air_request_id", id), zap.String("air_refused", code))
}
