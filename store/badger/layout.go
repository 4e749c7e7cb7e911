package badger

import (
	"encoding/json"
	"net/url"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/caddy-air/caddy-air/store"
)

// Key layout of the ledger and budgets repositories. Every component that
// comes from outside (ids, model names, currencies) is path-escaped, so
// "/" only ever separates components.
//
//	l/j                                          journal position up to which the DB counts records (16 bytes)
//	l/i/<id>                                     journal position of a record written with Insert ('j' + 16 bytes), with the retention TTL
//	a/<2006-01-02>/<user>/<key>/<model>/<currency> aggregate (JSON), kept forever
//	au/<user>/<2006-01-02>/<key>/<model>/<currency> empty: the aggregate exists (one user's aggregates, by day)
//	am/<2006-01>/<user>/<currency>               a user's totals of a month (JSON, no sources or outcomes), kept forever
//	l/au                                         set once every aggregate has its au/ entry and every month its am/ totals
//	b/l/<u|k|t>/<id>                             limits of a user, key or team (JSON)
//	b/s/<u|k|t>/<id>/<currency>/<2006-01|total>  spend of a user, key or team (nanos)
//	b/r/<lease id>                               a budget lease (JSON), with a TTL to its expiry
//	t/t/<team>                                   a team, with its members (JSON; teams.go)
//	t/m/<user>                                   the team of a member (its name)
//
// The records themselves are in the ledger's journal, not in the DB.
// Versions before the journal kept records under "0/r/" and "l/t/", with
// index entries holding a record's time or key; those records are no
// longer read (their aggregates and spend still count, and their index
// entries still make Insert idempotent).
const (
	prefixRecordIDs  = "l/i/"
	keyJournalCount  = "l/j"
	prefixAggregates = "a/"
	prefixUserAggs   = "au/"
	prefixMonthUsers = "am/"
	keyUserAggsBuilt = "l/au"
	prefixLimits     = "b/l/"
	prefixSpend      = "b/s/"
	prefixLeases     = "b/r/"
)

// esc escapes one key component.
func esc(s string) string { return url.PathEscape(s) }

// unesc reverses esc.
func unesc(s string) string {
	u, err := url.PathUnescape(s)
	if err != nil {
		return s
	}
	return u
}

// recordIDKey is the key of the index entry of the record with id.
func recordIDKey(id string) []byte { return []byte(prefixRecordIDs + esc(id)) }

// aggregateKey is an aggregate's key.
func aggregateKey(k store.AggregateKey) []byte {
	return []byte(prefixAggregates + k.Day + "/" + esc(k.User) + "/" + esc(k.KeyID) + "/" + esc(k.Model) + "/" + esc(k.Currency))
}

// userAggregateKey is the key of an aggregate's entry in its user's
// index.
func userAggregateKey(k store.AggregateKey) []byte {
	return []byte(prefixUserAggs + esc(k.User) + "/" + k.Day + "/" + esc(k.KeyID) + "/" + esc(k.Model) + "/" + esc(k.Currency))
}

// parseUserAggregateKey parses the key of an entry of a user's index.
func parseUserAggregateKey(b []byte) (store.AggregateKey, bool) {
	parts := strings.Split(strings.TrimPrefix(string(b), prefixUserAggs), "/")
	if len(parts) != 5 {
		return store.AggregateKey{}, false
	}
	return store.AggregateKey{User: unesc(parts[0]), Day: parts[1], KeyID: unesc(parts[2]), Model: unesc(parts[3]), Currency: unesc(parts[4])}, true
}

// monthUserKey is the key of a user's totals of a month in a currency.
func monthUserKey(month, user, currency string) []byte {
	return []byte(prefixMonthUsers + month + "/" + esc(user) + "/" + esc(currency))
}

// parseAggregateKey parses an aggregate's key.
func parseAggregateKey(b []byte) (store.AggregateKey, bool) {
	parts := strings.Split(strings.TrimPrefix(string(b), prefixAggregates), "/")
	if len(parts) != 5 {
		return store.AggregateKey{}, false
	}
	return store.AggregateKey{Day: parts[0], User: unesc(parts[1]), KeyID: unesc(parts[2]), Model: unesc(parts[3]), Currency: unesc(parts[4])}, true
}

// short is a scope's key component.
func short(s store.Scope) string {
	switch s {
	case store.ScopeUser:
		return "u"
	case store.ScopeTeam:
		return "t"
	}
	return "k"
}

// subjectPart is a subject's key components.
func subjectPart(s store.Subject) string { return short(s.Scope) + "/" + esc(s.ID) }

// parseSubject parses "<u|k|t>/<escaped id>".
func parseSubject(s string) (store.Subject, bool) {
	sh, id, ok := strings.Cut(s, "/")
	switch {
	case !ok:
		return store.Subject{}, false
	case sh == "u":
		return store.Subject{Scope: store.ScopeUser, ID: unesc(id)}, true
	case sh == "k":
		return store.Subject{Scope: store.ScopeKey, ID: unesc(id)}, true
	case sh == "t":
		return store.Subject{Scope: store.ScopeTeam, ID: unesc(id)}, true
	}
	return store.Subject{}, false
}

// limitsKey is the key of a subject's limits.
func limitsKey(s store.Subject) []byte { return []byte(prefixLimits + subjectPart(s)) }

// spendKey is the key of a subject's spend in a currency and period.
func spendKey(s store.Subject, currency, period string) []byte {
	return []byte(prefixSpend + subjectPart(s) + "/" + esc(currency) + "/" + period)
}

// nanos is an amount in nano units that is JSON-encoded as a string of
// currency units ("1.5"), as billing.Amount is, and read from a string or
// a number.
type nanos int64

// MarshalJSON implements json.Marshaler.
func (n nanos) MarshalJSON() ([]byte, error) {
	return json.Marshal(decimal.New(int64(n), -9).StringFixed(9))
}

// UnmarshalJSON implements json.Unmarshaler.
func (n *nanos) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	var str string
	if json.Unmarshal(b, &str) == nil {
		s = str
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return err
	}
	*n = nanos(d.Shift(9).IntPart())
	return nil
}

// usageJSON is store.Usage as the DB keeps it in aggregates.
type usageJSON struct {
	Input           int64 `json:"input_tokens"`
	CacheCreation   int64 `json:"cache_creation_tokens,omitempty"`
	CacheCreation1h int64 `json:"cache_creation_1h_tokens,omitempty"`
	CacheRead       int64 `json:"cache_read_tokens,omitempty"`
	Output          int64 `json:"output_tokens"`
	Reasoning       int64 `json:"reasoning_tokens,omitempty"`
	AudioInput      int64 `json:"audio_input_tokens,omitempty"`
	AudioOutput     int64 `json:"audio_output_tokens,omitempty"`
	ImageInput      int64 `json:"image_input_tokens,omitempty"`
	ImageOutput     int64 `json:"image_output_tokens,omitempty"`
	WebSearches     int64 `json:"web_searches,omitempty"`
	WebFetches      int64 `json:"web_fetches,omitempty"`
	FileSearches    int64 `json:"file_searches,omitempty"`
	CodeSessions    int64 `json:"code_sessions,omitempty"`
	ImageCalls      int64 `json:"image_generation_calls,omitempty"`
	Characters      int64 `json:"characters,omitempty"`
	AudioMillis     int64 `json:"audio_ms,omitempty"`
	SearchUnits     int64 `json:"search_units,omitempty"`
}

// totalsJSON is an aggregate as the DB keeps it.
type totalsJSON struct {
	Requests int64 `json:"requests"`
	Unpriced int64 `json:"unpriced"`
	// UnpricedCharges was added with priced tool calls; older aggregates
	// read it as zero.
	UnpricedCharges int64            `json:"unpriced_charges,omitempty"`
	Usage           usageJSON        `json:"usage"`
	Images          int64            `json:"images"`
	VideoMillis     int64            `json:"video_ms"`
	Cost            nanos            `json:"cost"`
	Sources         map[string]int64 `json:"sources,omitempty"`
	Outcomes        map[string]int64 `json:"outcomes,omitempty"`
}

// encodeTotals returns an aggregate's value.
func encodeTotals(t *store.Totals) ([]byte, error) {
	return json.Marshal(totalsJSON{
		Requests: t.Requests, Unpriced: t.Unpriced, UnpricedCharges: t.UnpricedCharges, Usage: usageJSON(t.Usage),
		Images: t.Images, VideoMillis: t.VideoMillis, Cost: nanos(t.Cost),
		Sources: t.Sources, Outcomes: t.Outcomes,
	})
}

// decodeTotals decodes an aggregate's value.
func decodeTotals(b []byte) (store.Totals, error) {
	var j totalsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return store.Totals{}, err
	}
	return store.Totals{
		Requests: j.Requests, Unpriced: j.Unpriced, UnpricedCharges: j.UnpricedCharges, Usage: store.Usage(j.Usage),
		Images: j.Images, VideoMillis: j.VideoMillis, Cost: int64(j.Cost),
		Sources: j.Sources, Outcomes: j.Outcomes,
	}, nil
}

// limitsJSON is store.Limits as the DB keeps it.
type limitsJSON struct {
	Currency string `json:"currency,omitempty"`
	Monthly  nanos  `json:"monthly,omitempty"`
	Total    nanos  `json:"total,omitempty"`
	RPM      int64  `json:"rpm,omitempty"`
	TPM      int64  `json:"tpm,omitempty"`
	// MaxParallel is store.Limits.MaxParallel.
	MaxParallel int64 `json:"max_parallel,omitempty"`
}
