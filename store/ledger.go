package store

import (
	"context"
	"math"
	"time"
)

// Usage is a record's normalized token usage.
type Usage struct {
	// Input is the prompt tokens billed at the plain input price.
	Input int64
	// CacheCreation is the prompt tokens written to the cache.
	CacheCreation int64
	// CacheCreation1h is the part of CacheCreation written for one hour.
	CacheCreation1h int64
	// CacheRead is the prompt tokens read from the cache.
	CacheRead int64
	// Output is the generated tokens, reasoning included.
	Output int64
	// Reasoning is the part of Output spent on reasoning.
	Reasoning int64
	// AudioInput and AudioOutput are the audio parts of Input and Output.
	AudioInput, AudioOutput int64
	// ImageInput and ImageOutput are the image token parts of Input and
	// Output.
	ImageInput, ImageOutput int64
	// WebSearches, WebFetches, FileSearches, CodeSessions and ImageCalls
	// count the provider's priced tool calls.
	WebSearches, WebFetches, FileSearches, CodeSessions, ImageCalls int64
	// Characters, AudioMillis and SearchUnits are the quantities of the
	// speech, transcription and rerank endpoints.
	Characters, AudioMillis, SearchUnits int64
}

// Record is one settled request or task (billing.Record's storage shape).
type Record struct {
	// ID identifies the request or task.
	ID string
	// Time is when the request started (UTC); it picks the aggregate's day
	// and the spend's month.
	Time time.Time
	// Endpoint is "chat", "messages", "tasks" or "embeddings".
	Endpoint string
	// User owns the key that made the request.
	User string
	// KeyID is the public id of the API key.
	KeyID string
	// Model is the model id the client asked for.
	Model string
	// Provider is the provider that served it.
	Provider string
	// Usage is the normalized token usage.
	Usage Usage
	// Source says how Usage was obtained.
	Source string
	// Status is the HTTP status answered to the client.
	Status int
	// Outcome is a short word such as "ok" or "partial".
	Outcome string
	// Images is the number of images generated.
	Images int
	// VideoMillis is the duration of generated video.
	VideoMillis int64
	// Tier is the index of the price tier that applied, -1 if none.
	Tier int
	// Priced is false when the model had no price.
	Priced bool
	// Currency is the currency of Cost ("" when unpriced).
	Currency string
	// Cost is what the request cost, in nano units of Currency.
	Cost int64
	// ServiceTier is the service tier the upstream reported, if any.
	ServiceTier string
	// Deployment is the deployment that answered ("provider/upstream
	// model"), empty when unknown.
	Deployment string
	// ServedModel is the fallback model that answered, when it was not
	// the model asked for.
	ServedModel string
	// Unpriced lists, comma-separated, the charges of Usage that the
	// price file had no price for ("web_search,audio_input"); "" when
	// every charge was priced.
	Unpriced string
	// DurationMillis is how long the request took, in milliseconds (at
	// least 1 when measured); 0 when it was not measured.
	DurationMillis int64
	// Team is the team of User when the request was admitted, "" if
	// none; its spend counts in the team's budget (ScopeTeam).
	Team string
	// Tags lists the request's tags, comma-separated, "" for none.
	Tags string
}

// Totals sums records: the aggregate of a day, user, key, model and
// currency.
type Totals struct {
	// Requests is the number of records.
	Requests int64
	// Unpriced is the number of records that had no price.
	Unpriced int64
	// UnpricedCharges is the number of records with a charge that had no
	// price (Record.Unpriced not empty).
	UnpricedCharges int64
	// Usage sums the records' usage.
	Usage Usage
	// Images sums the records' images.
	Images int64
	// VideoMillis sums the records' video.
	VideoMillis int64
	// Cost sums the records' cost.
	Cost int64
	// Sources counts the records by usage source (empty sources are not
	// counted).
	Sources map[string]int64
	// Outcomes counts the records by outcome (empty outcomes are not
	// counted).
	Outcomes map[string]int64
}

// Add counts rec in t. Every sum saturates at the bounds of int64
// instead of wrapping (see AddSat).
func (t *Totals) Add(rec *Record) {
	t.Requests = AddSat(t.Requests, 1)
	if !rec.Priced {
		t.Unpriced = AddSat(t.Unpriced, 1)
	}
	if rec.Unpriced != "" {
		t.UnpricedCharges = AddSat(t.UnpricedCharges, 1)
	}
	t.Usage = addUsage(t.Usage, rec.Usage)
	t.Images = AddSat(t.Images, int64(rec.Images))
	t.VideoMillis = AddSat(t.VideoMillis, rec.VideoMillis)
	t.Cost = AddSat(t.Cost, rec.Cost)
	if rec.Source != "" {
		t.Sources = inc(t.Sources, rec.Source, 1)
	}
	if rec.Outcome != "" {
		t.Outcomes = inc(t.Outcomes, rec.Outcome, 1)
	}
}

// Merge adds o to t, saturating like Add.
func (t *Totals) Merge(o *Totals) {
	t.Requests = AddSat(t.Requests, o.Requests)
	t.Unpriced = AddSat(t.Unpriced, o.Unpriced)
	t.UnpricedCharges = AddSat(t.UnpricedCharges, o.UnpricedCharges)
	t.Usage = addUsage(t.Usage, o.Usage)
	t.Images = AddSat(t.Images, o.Images)
	t.VideoMillis = AddSat(t.VideoMillis, o.VideoMillis)
	t.Cost = AddSat(t.Cost, o.Cost)
	for k, v := range o.Sources {
		t.Sources = inc(t.Sources, k, v)
	}
	for k, v := range o.Outcomes {
		t.Outcomes = inc(t.Outcomes, k, v)
	}
}

// AddSat returns a+b, saturating at the bounds of int64 instead of
// wrapping: a sum of money or tokens that reached the largest int64 stays
// there and never turns small or negative. Every sum of records (the
// aggregates, the month totals, the spend counters) adds with it, in Go
// as in SQL.
func AddSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// SubSat returns a-b, saturating like AddSat: what is left of a budget
// whose spend stands at the largest int64 is very negative, never room.
func SubSat(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return AddSat(a, -b)
}

func addUsage(a, b Usage) Usage {
	return Usage{Input: AddSat(a.Input, b.Input), CacheCreation: AddSat(a.CacheCreation, b.CacheCreation),
		CacheCreation1h: AddSat(a.CacheCreation1h, b.CacheCreation1h), CacheRead: AddSat(a.CacheRead, b.CacheRead),
		Output: AddSat(a.Output, b.Output), Reasoning: AddSat(a.Reasoning, b.Reasoning),
		AudioInput: AddSat(a.AudioInput, b.AudioInput), AudioOutput: AddSat(a.AudioOutput, b.AudioOutput),
		ImageInput: AddSat(a.ImageInput, b.ImageInput), ImageOutput: AddSat(a.ImageOutput, b.ImageOutput),
		WebSearches: AddSat(a.WebSearches, b.WebSearches), WebFetches: AddSat(a.WebFetches, b.WebFetches),
		FileSearches: AddSat(a.FileSearches, b.FileSearches), CodeSessions: AddSat(a.CodeSessions, b.CodeSessions),
		ImageCalls: AddSat(a.ImageCalls, b.ImageCalls), Characters: AddSat(a.Characters, b.Characters),
		AudioMillis: AddSat(a.AudioMillis, b.AudioMillis), SearchUnits: AddSat(a.SearchUnits, b.SearchUnits)}
}

func inc(m map[string]int64, k string, n int64) map[string]int64 {
	if m == nil {
		m = map[string]int64{}
	}
	m[k] = AddSat(m[k], n)
	return m
}

// DayLayout formats an aggregate's day (UTC).
const DayLayout = "2006-01-02"

// AggregateKey names one aggregate.
type AggregateKey struct {
	// Day is the records' day, in DayLayout (UTC).
	Day string
	// User, KeyID, Model and Currency are the records' own.
	User, KeyID, Model, Currency string
}

// KeyOf is the aggregate that rec counts in.
func KeyOf(rec *Record) AggregateKey {
	return AggregateKey{Day: rec.Time.UTC().Format(DayLayout), User: rec.User, KeyID: rec.KeyID, Model: rec.Model, Currency: rec.Currency}
}

// Aggregate is the totals of one day, user, key, model and currency.
type Aggregate struct {
	AggregateKey
	Totals
}

// UsageFilter selects aggregates. Empty fields match everything.
type UsageFilter struct {
	// User, KeyID and Model must match exactly when set.
	User, KeyID, Model string
	// Since and Until bound the day, both inclusive, in DayLayout.
	Since, Until string
}

// UserTotals is the totals of one user's records in one currency over a
// period.
type UserTotals struct {
	// User and Currency are the records' own.
	User, Currency string
	Totals
}

// RecordQuery selects a page of one user's ledger records.
type RecordQuery struct {
	// User owns the records. Required.
	User string
	// KeyID, Model and Outcome must match exactly when set.
	KeyID, Model, Outcome string
	// Since and Until bound the records' Time: since <= Time < until (a
	// zero bound is open).
	Since, Until time.Time
	// After is the cursor a previous page returned; "" starts at the
	// oldest record (the newest with Desc).
	After string
	// Limit is the most records to return; at least 1.
	Limit int
	// Desc returns the records newest first (in the reverse of their
	// write order); its cursors page on toward older records.
	Desc bool
}

// Matches reports whether rec is q's user's and passes q's filters
// (the cursor aside).
func (q *RecordQuery) Matches(rec *Record) bool {
	return rec.User == q.User && (q.KeyID == "" || rec.KeyID == q.KeyID) && (q.Model == "" || rec.Model == q.Model) &&
		(q.Outcome == "" || rec.Outcome == q.Outcome) && (q.Since.IsZero() || !rec.Time.Before(q.Since)) &&
		(q.Until.IsZero() || rec.Time.Before(q.Until))
}

// Ledger is the durable record of settled requests and tasks, with the
// aggregates and spend counters derived from it.
//
// Guarantees every implementation keeps:
//
//   - Durability: when Append or Insert returns nil, its records survive a
//     crash of the process (kill -9) and of the machine as far as the
//     backend's storage syncs (Badger: the journal is fdatasync'ed per
//     batch; PostgreSQL: the transaction committed). A client's last byte
//     waits for this in ledger_durability strict (for DeferredSync.Write
//     in journaled, the default), so a backend must make a batch cheap:
//     one sync or one transaction for all records of a call.
//   - Consistency: the aggregates (Usage) and spend counters
//     (Budgets.Spend) count exactly the records that Records returns,
//     each once, once Flush has returned. An implementation may count
//     appended records a little later than it makes them durable
//     (Badger: within 50 ms), never fewer or twice, and never loses the
//     count across a crash.
//   - Retention: records older than the retention given to the backend are
//     dropped (with the records only; aggregates and spend stay).
type Ledger interface {
	// Append makes recs durable in one batch. Their IDs must be new (a
	// request's random id): an implementation need not look them up, so a
	// repeated ID may be stored twice (Badger) or skipped (PostgreSQL's ON
	// CONFLICT DO NOTHING); callers never rely on either. On error nothing
	// of recs is counted and the caller may retry the whole batch. Append
	// takes recs over: the caller must not change them afterwards (an
	// implementation may keep them until it has counted them).
	Append(ctx context.Context, recs []Record) error
	// Insert makes rec durable at once, idempotently on rec.ID: it reports
	// whether rec was new, and inserting an ID that an earlier Insert
	// wrote changes nothing and reports false. It is for records whose ID
	// may come again, such as a task's charge after a crash.
	Insert(ctx context.Context, rec Record) (bool, error)
	// Get returns the record that Insert wrote with id, or ErrNotFound.
	// Records of Append may be found too; callers do not rely on it.
	Get(ctx context.Context, id string) (Record, error)
	// Records calls fn for every record with since <= Time < until (a zero
	// bound is open) within the retention, in the order they were written.
	// fn may return ErrStop. Appended records are included once Flush
	// returned.
	Records(ctx context.Context, since, until time.Time, fn func(Record) error) error
	// UserRecords returns a page of one user's records within the
	// retention, in the order they were written: up to q.Limit records
	// after the cursor q.After, and the cursor of the next page ("" when
	// there are no more). Cursors are opaque and stay valid while the
	// records they follow are retained. A page reads from its cursor on,
	// never the records before it (PostgreSQL: an index on user and
	// order; Badger: the journal from the cursor's position).
	UserRecords(ctx context.Context, q RecordQuery) ([]Record, string, error)
	// MonthTotals calls fn with every user's totals of month (MonthLayout,
	// UTC) per currency, in no particular order. Sources and Outcomes are
	// not kept. It reads per-month aggregates: its cost grows with the
	// users of the month, not with their records or days.
	MonthTotals(ctx context.Context, month string, fn func(UserTotals) error) error
	// Usage calls fn for every aggregate that f selects, in day order.
	// fn may return ErrStop.
	Usage(ctx context.Context, f UsageFilter, fn func(Aggregate) error) error
	// Flush returns once every record appended before the call is counted
	// in the aggregates and spend counters, or ctx ends.
	Flush(ctx context.Context) error
	// Err reports why the ledger refuses records for good (for example a
	// failed sync: nothing written since can be trusted to be on disk), or
	// nil. The gateway must be restarted once the storage is healthy.
	Err() error
	// Close counts what is left and releases the ledger. Calls after Close
	// fail.
	Close() error
}

// DeferredSync is a Ledger that can make records survive a kill of the
// process before it makes them survive a crash of the machine: the
// billing writer's ledger_durability journaled, where an answer's end
// waits for Write and syncs run in the background.
type DeferredSync interface {
	// Write is Append without the wait for the machine-crash durability:
	// when it returns nil its records survive a kill of the process, an
	// OOM kill or a panic (Badger: written to the journal with a write,
	// not synced; PostgreSQL: journaled over their intents, committed with
	// synchronous_commit off). Its other terms are Append's. Records
	// written are counted in the aggregates and spend once a Sync covered
	// them; Flush counts only what a Sync covered.
	Write(ctx context.Context, recs []Record) error
	// Sync makes every record written before the call durable against a
	// crash of the machine (Badger: one fdatasync of the journal;
	// PostgreSQL: the journaled records written to the ledger in a
	// synchronous commit, which flushes the WAL of every earlier commit).
	// It may run concurrently with Write and must not hold it up for the
	// time the disk takes. An error that Err reports from then on stops
	// the ledger.
	Sync(ctx context.Context) error
}

// Intents keeps, for every request about to reach an upstream, the record
// it would leave if its instance died before settling it. An intent
// survives a crash of its instance's process; it is resolved by Resolve
// (its record is durable) or Abandon (it never reached an upstream).
type Intents interface {
	// Add records the intent rec (the record the request leaves with
	// outcome "interrupted" if it is never settled) and returns once it
	// survives a kill of this process: the request reaches its upstream
	// only then. It must be cheap: it is on every request's path (Badger:
	// an unsynced append to a file; PostgreSQL: a committed row, with the
	// commits of concurrent requests grouped).
	Add(rec Record) error
	// Resolve forgets the intents of ids, whose records are durable.
	Resolve(ids []string)
	// Abandon forgets the intent of id so that it is never reported by
	// Interrupted.
	Abandon(id string)
	// Interrupted returns, once per instance, the intents that a stopped
	// instance left unresolved and whose records are not in the ledger:
	// requests that had reached an upstream when it stopped. The caller
	// prices them, appends them to the ledger and then resolves them. An
	// intent whose record is in the ledger is resolved by Interrupted
	// itself. With a shared backend, an instance's intents are reported to
	// another once the dead instance's lease expired.
	Interrupted(ctx context.Context) ([]Record, error)
}
