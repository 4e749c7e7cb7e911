package billing

import (
	"net/url"
	"strings"
	"time"
)

// Store layout. Every component that comes from outside (ids, model names,
// currencies) is path-escaped, so "/" only ever separates components.
//
//	l/j                                          journal position up to which the store counts records (16 bytes)
//	l/i/<id>                                     journal position of a record written with Write ('j' + 16 bytes), with the retention TTL
//	a/<2006-01-02>/<user>/<key>/<model>/<currency> aggregate (JSON), kept forever
//	b/l/<u|k>/<id>                               limits of a user or key (JSON)
//	b/s/<u|k>/<id>/<currency>/<2006-01|total>    spend of a user or key (nanos)
//	0/r/<20060102T150405.000000000Z>/<id>        record written by an earlier version (read, never written)
//	l/t/<20060102T150405.000000000Z>/<id>        record written by an earlier version (read, never written)
//
// The records themselves are in the ledger's journal, not in the store;
// package store/journal says why. Index entries written by earlier
// versions hold a record's time (8 bytes) or its key.
const (
	prefixRecordsV2  = "0/r/"
	prefixRecordsV1  = "l/t/"
	prefixRecordIDs  = "l/i/"
	keyJournalCount  = "l/j"
	prefixAggregates = "a/"
	prefixLimits     = "b/l/"
	prefixSpend      = "b/s/"
)

// recordTimeLayout makes the record keys of earlier versions sort by time.
const recordTimeLayout = "20060102T150405.000000000Z"

// dayLayout names an aggregate's day, monthLayout a spend period.
const (
	dayLayout   = "2006-01-02"
	monthLayout = "2006-01"
	periodTotal = "total"
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

// recordKeyIn is the key under prefix of the record with id and time t.
func recordKeyIn(prefix string, t time.Time, id string) []byte {
	return []byte(prefix + t.UTC().Format(recordTimeLayout) + "/" + esc(id))
}

// recordIDKey is the key of the index entry of the record with id.
func recordIDKey(id string) []byte { return []byte(prefixRecordIDs + esc(id)) }

// aggKey identifies one aggregate: a day, user, key, model and currency.
type aggKey struct {
	day, user, key, model, currency string
}

// bytes is the aggregate's store key.
func (k aggKey) bytes() []byte {
	return []byte(prefixAggregates + k.day + "/" + esc(k.user) + "/" + esc(k.key) + "/" + esc(k.model) + "/" + esc(k.currency))
}

// parseAggKey parses an aggregate's store key.
func parseAggKey(b []byte) (aggKey, bool) {
	parts := strings.Split(strings.TrimPrefix(string(b), prefixAggregates), "/")
	if len(parts) != 5 {
		return aggKey{}, false
	}
	return aggKey{day: parts[0], user: unesc(parts[1]), key: unesc(parts[2]), model: unesc(parts[3]), currency: unesc(parts[4])}, true
}

// aggKeyOf is the aggregate that rec counts in.
func aggKeyOf(rec *Record) aggKey {
	return aggKey{day: rec.Time.UTC().Format(dayLayout), user: rec.User, key: rec.KeyID, model: rec.Model, currency: rec.Currency}
}

// Scope says whether limits and spend belong to a user or to an API key.
type Scope string

// Scopes of limits.
const (
	ScopeUser Scope = "user"
	ScopeKey  Scope = "key"
)

// short is the scope's key component.
func (s Scope) short() string {
	if s == ScopeUser {
		return "u"
	}
	return "k"
}

// valid reports whether s is a known scope.
func (s Scope) valid() bool { return s == ScopeUser || s == ScopeKey }

// limitsKey is the store key of a subject's limits.
func limitsKey(s Scope, id string) []byte {
	return []byte(prefixLimits + s.short() + "/" + esc(id))
}

// spendKey is the store key of a subject's spend in a currency and period.
func spendKey(s Scope, id, currency, period string) []byte {
	return []byte(prefixSpend + s.short() + "/" + esc(id) + "/" + esc(currency) + "/" + period)
}

// monthOf is the spend period (calendar month, UTC) that t falls in.
func monthOf(t time.Time) string { return t.UTC().Format(monthLayout) }
