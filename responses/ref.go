// Package responses keeps what the gateway knows about the responses that
// OpenAI's Responses API stores upstream: where each lives (Ref, stored in
// store.Responses under the response id), and the billing of background
// responses, which finish after their create has answered.
//
// A background response whose create did not report its usage is
// registered pending. It is billed once, under the id of its create's
// ledger record, by whichever first sees it finished: a client's
// retrieval through the gateway or the Poller, which claims pending
// responses with leases (so several instances never poll one at once)
// and retrieves them from the upstream until they finish. The ledger
// write is idempotent by record id, so a retrieval and a poll that race
// still leave exactly one record. While it runs, a background response
// holds its create's budget reservation (Hold, kept in Holds), which its
// record replaces.
package responses

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/caddy-air/caddy-air/store"
)

// TTL is how long the gateway maps a response id: OpenAI keeps stored
// responses for 30 days.
const TTL = 30 * 24 * time.Hour

// OutcomeUnfinished is the outcome of a background response the gateway
// stopped polling without seeing it finish: it was still running after
// the poller's max_age, or the upstream no longer knew it (deleted). Its
// record has no usage and costs nothing.
const OutcomeUnfinished = billing.OutcomeUnfinished

// Ref is where a response lives, as stored under its id.
type Ref struct {
	// User owns the API key that created the response.
	User string `json:"user"`
	// KeyID is the public id of that key.
	KeyID string `json:"key_id"`
	// Provider is the name of the provider that holds the response.
	Provider string `json:"provider"`
	// BaseURL is the provider base URL that holds it.
	BaseURL string `json:"base_url"`
	// Key is the index of the provider's API key that created it; -1
	// when the provider has none.
	Key int `json:"key"`
	// Model is the model id the client asked for.
	Model string `json:"model"`
	// Record is the id of the create's ledger record.
	Record string `json:"record"`
	// Created is when the create started.
	Created time.Time `json:"created"`
	// Unbilled is set for a background response whose usage was not known
	// when it was created: it is billed, under Record, once it is seen
	// finished.
	Unbilled bool `json:"unbilled,omitempty"`
	// Log is set when the create's key or team had request logs on: the
	// final response is logged under Record when it is billed.
	Log bool `json:"log,omitempty"`
}

// Decode parses a stored Ref.
func Decode(b []byte) (Ref, error) {
	var ref Ref
	err := json.Unmarshal(b, &ref)
	return ref, err
}

// Encode returns ref as stored.
func (ref *Ref) Encode() []byte {
	b, _ := json.Marshal(ref)
	return b
}

// AttemptOf is the deployment ref names, if prov still has it.
func (ref *Ref) AttemptOf(prov *providers.Provider) (providers.Attempt, bool) {
	if prov == nil || !slices.ContainsFunc(prov.BaseURLs, func(u string) bool { return strings.TrimRight(u, "/") == ref.BaseURL }) {
		return providers.Attempt{}, false
	}
	a := providers.Attempt{BaseURL: ref.BaseURL}
	switch {
	case ref.Key >= 0 && ref.Key < len(prov.APIKeys):
		a.APIKey = prov.APIKeys[ref.Key]
	case ref.Key >= 0 || len(prov.APIKeys) > 0:
		return providers.Attempt{}, false
	}
	return a, true
}

// Finished reports a response status after which nothing more is billed.
func Finished(status string) bool {
	switch status {
	case "completed", "incomplete", "failed", "cancelled":
		return true
	}
	return false
}

// Finish is the ledger record of background response ref seen finished
// with status: usage counts when reported is set (the answer carried
// it). A retrieval and a poll that see the same response build the same
// record.
func (ref *Ref) Finish(status string, usage billing.Usage, reported bool, serviceTier string) billing.Record {
	outcome := billing.OutcomeOK
	switch status {
	case "failed":
		outcome = billing.OutcomeUpstreamError
	case "cancelled":
		outcome = billing.OutcomeCanceled
	}
	if !reported {
		usage = billing.Usage{}
	}
	rec := ref.unfinished()
	rec.Usage, rec.Outcome, rec.ServiceTier = usage, outcome, serviceTier
	return rec
}

// unfinished is the record of background response ref when the gateway
// gave up on it (OutcomeUnfinished).
func (ref *Ref) unfinished() billing.Record {
	return billing.Record{
		ID: ref.Record, Time: ref.Created, Endpoint: billing.EndpointResponses, User: ref.User, KeyID: ref.KeyID,
		Model: ref.Model, Provider: ref.Provider, Source: billing.SourceReported, Status: http.StatusOK,
		Outcome: OutcomeUnfinished,
	}
}

// Biller writes ledger records, idempotently by record id: a record
// whose id the ledger holds is not counted again.
type Biller interface {
	// Charge prices rec and writes it synchronously.
	Charge(ctx context.Context, rec billing.Record) error
}

// Settle charges rec, the record of pending background response id
// (stored as ref), and then stores ref as billed, which ends its pending
// state. Whoever settles first writes the record; a later Settle (the
// retrieval after the poll, or the reverse) is a no-op in the ledger.
func Settle(ctx context.Context, st store.Responses, b Biller, id string, ref Ref, rec billing.Record, now time.Time) error {
	if err := b.Charge(ctx, rec); err != nil {
		return err
	}
	ref.Unbilled = false
	ttl := ref.Created.Add(TTL).Sub(now)
	if ttl <= 0 {
		ttl = time.Second
	}
	return st.Put(ctx, id, ref.Encode(), ttl)
}
