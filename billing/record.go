package billing

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/store"
)

// Endpoints recorded in Record.Endpoint.
const (
	EndpointChat      = "chat"
	EndpointMessages  = "messages"
	EndpointResponses = "responses"
	EndpointTasks     = "tasks"
	// EndpointEmbeddings is POST /v1/embeddings.
	EndpointEmbeddings = "embeddings"
	// EndpointModerations is POST /v1/moderations.
	EndpointModerations = "moderations"
	// EndpointSpeech is POST /v1/audio/speech.
	EndpointSpeech = "speech"
	// EndpointTranscriptions is POST /v1/audio/transcriptions.
	EndpointTranscriptions = "transcriptions"
	// EndpointTranslations is POST /v1/audio/translations.
	EndpointTranslations = "translations"
	// EndpointPassthrough is a request air_passthrough forwarded.
	EndpointPassthrough = "passthrough"
	// EndpointRerank is POST /v1/rerank.
	EndpointRerank = "rerank"
	// EndpointBatch is a line of a batch's output (/v1/batches).
	EndpointBatch = "batch"
)

// Outcomes recorded in Record.Outcome. Other values are allowed.
const (
	// OutcomeOK is a request or task that completed normally.
	OutcomeOK = "ok"
	// OutcomePartial is a response the client abandoned part way.
	OutcomePartial = "partial"
	// OutcomeUpstreamError is an error answered by the upstream.
	OutcomeUpstreamError = "upstream_error"
	// OutcomeFailed is a request or task that failed otherwise.
	OutcomeFailed = "failed"
	// OutcomeTimeout is an upstream that did not answer, or fell silent,
	// within its timeout. It is not billed (see Unbilled).
	OutcomeTimeout = "timeout"
	// OutcomeUnavailable is a request sent to upstreams none of which
	// answered. It is not billed.
	OutcomeUnavailable = "unavailable"
	// OutcomeCanceled is a client that left before the upstream's response
	// headers arrived: the upstream received the prompt, so it is billed
	// on its estimate.
	OutcomeCanceled = "canceled"
	// OutcomeUnfinished is a background response the gateway stopped
	// polling without seeing it finish (still running after the poller's
	// max_age, or no longer known to the upstream). It has no usage and is
	// not billed (see Unbilled).
	OutcomeUnfinished = "unfinished"
	// OutcomeWithheld is an answer whose end the gateway withheld because
	// its record was not written in time (the client got
	// ledger_unavailable instead, and may retry): the record keeps the
	// usage, tier and currency, so that an operator sees the provider's
	// charge, and is not billed (see Unbilled).
	OutcomeWithheld = "withheld"
)

// withhold turns rec, settled but not written when its client was given
// an error instead of the answer, into the record of a withheld answer:
// outcome withheld, no cost; usage, tier and currency stay.
func withhold(rec *Record) {
	rec.Outcome, rec.Cost = OutcomeWithheld, 0
}

// Record is the ledger entry of one settled request or task. It is written
// exactly once: a second write with the same ID is a no-op.
type Record struct {
	// ID identifies the request or task; it makes writes idempotent.
	ID string `json:"id"`
	// Time is when the request started (UTC); it picks the aggregate's day
	// and the budget's month.
	Time time.Time `json:"time"`
	// Endpoint is EndpointChat, EndpointMessages, EndpointTasks,
	// EndpointEmbeddings or EndpointBatch.
	Endpoint string `json:"endpoint"`
	// User owns the key that made the request.
	User string `json:"user"`
	// KeyID is the public id of the API key.
	KeyID string `json:"key_id"`
	// Model is the model id the client asked for.
	Model string `json:"model"`
	// Provider is the name of the provider that served it.
	Provider string `json:"provider,omitempty"`
	// Usage is the normalized token usage.
	Usage Usage `json:"usage"`
	// Source says how Usage was obtained.
	Source Source `json:"source,omitempty"`
	// Status is the HTTP status answered to the client.
	Status int `json:"status,omitempty"`
	// Outcome is OutcomeOK, OutcomePartial, OutcomeUpstreamError,
	// OutcomeFailed or another short word.
	Outcome string `json:"outcome,omitempty"`
	// Images is the number of images generated.
	Images int `json:"images,omitempty"`
	// VideoMillis is the duration of generated video in milliseconds.
	VideoMillis int64 `json:"video_ms,omitempty"`
	// Tier is the index of the price tier that applied, -1 if none.
	Tier int `json:"tier"`
	// Priced is false when the model had no price ("unpriced").
	Priced bool `json:"priced"`
	// Currency is the currency of Cost ("" when unpriced).
	Currency string `json:"currency,omitempty"`
	// Cost is what the request cost, in nano units of Currency.
	Cost Amount `json:"cost"`
	// ServiceTier is the service tier the upstream reported serving the
	// request at ("flex", "priority", ...); it selects the model's price
	// multiplier for that tier, if the price file sets one.
	ServiceTier string `json:"service_tier,omitempty"`
	// Deployment is the deployment that answered, "provider/upstream
	// model" (or the provider alone when the model name is the client's).
	Deployment string `json:"deployment,omitempty"`
	// ServedModel is the fallback model that answered, when it was not
	// Model.
	ServedModel string `json:"served_model,omitempty"`
	// Unpriced lists the charges of Usage (Charge* kinds) that the model's
	// price has no rule for: they are in Usage but not in Cost, which is
	// then short of what the provider bills. A record of an unpriced model
	// (Priced false) lists none: nothing of it is priced.
	Unpriced []string `json:"unpriced,omitempty"`
	// DurationMillis is how long the request took, in milliseconds: from
	// its arrival at the gateway until its answer ended (for a task, from
	// its create until it reached its final state). It is at least 1 when
	// measured, and 0 (left out) when not: records written before it was
	// kept, and background responses.
	DurationMillis int64 `json:"duration_ms,omitempty"`
	// Team is the team of User when the request was admitted, "" if none.
	Team string `json:"team,omitempty"`
	// Tags are the request's tags (the x-air-tags header, or its key's
	// default tags), in the order given; see package tags.
	Tags []string `json:"tags,omitempty"`
}

// applyQuote copies a quote's result into rec.
func (rec *Record) applyQuote(q Quote) {
	rec.Tier, rec.Priced, rec.Currency, rec.Cost, rec.Unpriced = q.Tier, q.Priced, q.Currency, q.Cost, q.Unpriced
}

// fillDefaults gives rec an ID and a time if it lacks them.
func (rec *Record) fillDefaults(now time.Time) {
	if rec.ID == "" {
		rec.ID = newRecordID()
	}
	if rec.Time.IsZero() {
		rec.Time = now
	}
	rec.Time = rec.Time.UTC()
}

// newRecordID returns a random record id for a record that came without one.
func newRecordID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "rec_" + hex.EncodeToString(b)
}

// toStore returns rec's storage shape.
func (rec *Record) toStore() store.Record {
	return store.Record{
		ID: rec.ID, Time: rec.Time, Endpoint: rec.Endpoint, User: rec.User, KeyID: rec.KeyID,
		Model: rec.Model, Provider: rec.Provider, Usage: store.Usage(rec.Usage), Source: string(rec.Source),
		Status: rec.Status, Outcome: rec.Outcome, Images: rec.Images, VideoMillis: rec.VideoMillis,
		Tier: rec.Tier, Priced: rec.Priced, Currency: rec.Currency, Cost: int64(rec.Cost),
		ServiceTier: rec.ServiceTier, Deployment: rec.Deployment, ServedModel: rec.ServedModel,
		Unpriced: strings.Join(rec.Unpriced, ","), DurationMillis: rec.DurationMillis,
		Team: rec.Team, Tags: strings.Join(rec.Tags, ","),
	}
}

// recordFromStore returns the record of a storage shape.
func recordFromStore(s *store.Record) Record {
	return Record{
		ID: s.ID, Time: s.Time, Endpoint: s.Endpoint, User: s.User, KeyID: s.KeyID,
		Model: s.Model, Provider: s.Provider, Usage: Usage(s.Usage), Source: Source(s.Source),
		Status: s.Status, Outcome: s.Outcome, Images: s.Images, VideoMillis: s.VideoMillis,
		Tier: s.Tier, Priced: s.Priced, Currency: s.Currency, Cost: Amount(s.Cost),
		ServiceTier: s.ServiceTier, Deployment: s.Deployment, ServedModel: s.ServedModel,
		Unpriced: splitCharges(s.Unpriced), DurationMillis: s.DurationMillis,
		Team: s.Team, Tags: splitCharges(s.Tags),
	}
}

// splitCharges splits a stored comma-separated list (unpriced charges,
// tags); nil for "".
func splitCharges(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
