// Package gateway is the Caddy-free core of a request's life: an
// endpoint's descriptor (Endpoint) and the pipeline that serves one
// exchange of it (Engine, Exchange). Package caddymodule builds them in
// its handlers' Provision and hands each request to Engine.Serve.
package gateway

import (
	"mime"
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/chatproxy"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/providers"
)

// Endpoint describes one API route served through the exchange pipeline:
// what differs between chat, messages, responses, embeddings, token
// counting, moderations, speech, transcriptions and rerank.
type Endpoint struct {
	// Name is the ledger endpoint name (billing.Record.Endpoint), also
	// the endpoint of its metrics, spans and refusals
	// (airmetrics.Endpoint).
	Name string
	// Path is the upstream path below the provider's base URL.
	Path string
	// Kind is the model kind the endpoint serves (providers.Kind*).
	Kind string
	// Wire is the endpoint's protocol and the inspector of its requests.
	Wire Wire
	// Client is the endpoint's protocol as package translate names it,
	// for the endpoints whose requests may be translated to a model of
	// another protocol; "" for the others.
	Client string
	// Billing says what a request is billed on.
	Billing Billing
	// Body is what the endpoint accepts as a request body and answers.
	Body BodyPolicy
	// The hooks below get the exchange while it runs; none may keep it
	// past its call (the engine reuses it once the exchange ended).

	// Check, when set, refuses a request the model's route does not
	// allow, before admission (a speech format the model lacks).
	Check func(in dialect.Inspected, route *providers.Route) *apierror.Error
	// Pin, when set, returns the only attempts of a request (a create
	// that continues a stored response: the deployment that holds it),
	// or nil for the route's plan.
	Pin func(x *Exchange) ([]providers.Attempt, *apierror.Error)
	// Count, when set, answers an admitted request for a model whose
	// provider does not speak Messages (token counting), in place of the
	// proxy; it owns the reservation.
	Count func(x *Exchange) error
	// Settle, when set, is called with the exchange's record once an
	// upstream answered, before it is settled; it reports whether the
	// billing is deferred (a background response, billed by its
	// poller), in which case the engine settles nothing and releases the
	// held end of the answer at once.
	Settle func(x *Exchange) (deferred bool)
}

// Wire is how an endpoint's requests are read: its wire protocol (a
// dialect value: error shape, credentials, usage tap) and the inspector
// of its JSON bodies.
type Wire struct {
	// Protocol is the endpoint's dialect.Wire (openai.Wire,
	// openai.TranscriptWire, anthropic.Wire, responses.Wire).
	Protocol dialect.Wire
	// Inspect validates a JSON body and reads what the gateway needs of
	// it (nil for a multipart endpoint).
	Inspect func(body []byte, maxDepth int) (dialect.Inspected, *apierror.Error)
}

// BillingMode says whether an endpoint's requests leave ledger records.
type BillingMode uint8

// Billing modes.
const (
	// Billed requests leave one ledger record per exchange an upstream
	// saw.
	Billed BillingMode = iota
	// Unbilled requests leave no ledger record (token counting); they
	// still count against the rate limits.
	Unbilled
)

// Billing is what an endpoint's requests are billed on.
type Billing struct {
	// Mode is Billed or Unbilled.
	Mode BillingMode
	// NoOutput marks an endpoint that generates no tokens (embeddings,
	// token counting): its admission reserves no output.
	NoOutput bool
	// Usage, when set, is the usage a request is billed on, in place of
	// the tokens the proxy tapped: for the endpoints billed by other
	// quantities (a moderation by request, speech by character).
	Usage func(in dialect.Inspected, res *chatproxy.Result) (billing.Usage, billing.Source)
}

// BodyPolicy is what an endpoint accepts as a request body, and what it
// answers.
type BodyPolicy struct {
	// Multipart, when set, marks an endpoint whose requests are
	// multipart forms, read and edited by its dialect's functions and
	// sent upstream with their own content type. Otherwise a body must
	// be JSON (CheckContentType).
	Multipart *MultipartForm
	// MaxBody is the largest request body read, in bytes; 0: the app's
	// max_request_body.
	MaxBody int64
	// Binary marks an answer that is a file (chatproxy.Call.Binary).
	Binary bool
}

// MultipartForm is how a multipart endpoint's dialect reads and edits its
// forms (openai.InspectTranscription and openai.PrepareMultipart).
type MultipartForm struct {
	// Inspect validates a form of content type contentType and reads
	// what the gateway needs of it.
	Inspect func(contentType string, body []byte) (dialect.Inspected, *apierror.Error)
	// Prepare returns body with its model replaced by model.
	Prepare func(body []byte, in dialect.Inspected, model string) []byte
}

// CheckContentType requires JSON on a request that carries a body, or
// else a multipart form when multipart: 415 unsupported_media_type.
func CheckContentType(r *http.Request, multipart bool) *apierror.Error {
	if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "application/json" {
		return nil // the common case, without parsing
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return nil
	}
	if err == nil && mt == "multipart/form-data" && multipart {
		return nil
	}
	return apierror.New(http.StatusUnsupportedMediaType, apierror.TypeInvalidRequest, "unsupported_media_type",
		"requests with a body must have 'Content-Type: application/json'")
}

// WithArticle is kind with its indefinite article: "an embedding", "a
// chat".
func WithArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// kindRoutes are the routes that serve each model kind
// (RegisterKind); written only by init functions, read after.
var kindRoutes = map[string]string{}

// RegisterKind records route ("POST /v1/moderations") as the one that
// serves models of kind, named in the error of a request that sends such
// a model to another endpoint. It is called by the init function of the
// module that serves the route, and panics on a kind registered twice.
func RegisterKind(kind, route string) {
	if _, ok := kindRoutes[kind]; ok {
		panic("gateway: kind " + kind + " registered twice")
	}
	kindRoutes[kind] = route
}

// EndpointFor names the endpoint that serves a model kind: the route
// registered for it, else chat completions.
func EndpointFor(kind string) string {
	if route, ok := kindRoutes[kind]; ok {
		return route
	}
	return "POST /v1/chat/completions"
}
