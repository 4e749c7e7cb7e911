package store

import (
	"context"
	"math"
	"math/big"
	"time"
)

// Scope says whether limits and spend belong to a team, a user or an API
// key.
type Scope string

// Scopes of a Subject.
const (
	ScopeUser Scope = "user"
	ScopeKey  Scope = "key"
	ScopeTeam Scope = "team"
)

// Subject is a team, a user or an API key that limits and spend belong
// to.
type Subject struct {
	// Scope is ScopeUser, ScopeKey or ScopeTeam.
	Scope Scope
	// ID is the user's name, the key's public id or the team's name.
	ID string
}

// Limits are a subject's spend and rate limits (billing.Limits' storage
// shape). Zero means no limit.
type Limits struct {
	// Currency is the currency of Monthly and Total; "" means the price
	// table's default.
	Currency string
	// Monthly bounds the spend of a calendar month (UTC), in nanos.
	Monthly int64
	// Total bounds the spend of all time, in nanos.
	Total int64
	// RPM bounds requests per minute.
	RPM int64
	// TPM bounds tokens per minute.
	TPM int64
	// MaxParallel bounds requests in flight at once, per instance.
	MaxParallel int64
}

// Spend periods: a calendar month in MonthLayout (UTC), or PeriodTotal.
const (
	MonthLayout = "2006-01"
	PeriodTotal = "total"
)

// MonthOf is the spend period that t falls in.
func MonthOf(t time.Time) string { return t.UTC().Format(MonthLayout) }

// Spend is one spend counter: what a subject spent in a currency and a
// period, in nanos.
type Spend struct {
	Subject
	// Currency is the counter's currency.
	Currency string
	// Period is a month in MonthLayout or PeriodTotal.
	Period string
	// Amount is the spend, in nanos.
	Amount int64
}

// Lease is a reservation on a subject's budget: Amount of its remaining
// spend, held for one instance until Expires. Unexpired leases count
// against the budget like spend; an expired lease counts for nothing, so
// the reservation of an instance that died is freed once its lease ends.
type Lease struct {
	// ID identifies the lease.
	ID string
	// Subject is whose budget it reserves.
	Subject Subject
	// Currency is the currency of Amount.
	Currency string
	// Amount is the reserved spend, in nanos.
	Amount int64
	// Expires is when the lease stops counting.
	Expires time.Time
}

// Budgets keeps limits, spend counters and leases on budgets.
//
// Spend counters are written by the Ledger, in the same transaction (or
// the same deferred count) as the records they count: Budgets only reads
// them. Leases are how instances sharing a budget keep its overspend
// bounded: an instance takes a lease (a slice of the remaining budget),
// admits requests against its slice locally, settles them into the ledger
// and then releases (or extends) the lease. The overspend of a budget
// across all instances is then bounded by what its live leases' requests
// cost beyond their estimates, never by how many instances race.
type Budgets interface {
	// Limits calls fn for every subject that has limits.
	Limits(ctx context.Context, fn func(Subject, Limits) error) error
	// SetLimits stores s's limits, replacing any.
	SetLimits(ctx context.Context, s Subject, l Limits) error
	// DeleteLimits removes s's limits; removing none is not an error.
	DeleteLimits(ctx context.Context, s Subject) error
	// Spend calls fn for every spend counter: every subject's all-time
	// counter and its counters of recent months (at least the current and
	// the previous one; older months may have expired).
	Spend(ctx context.Context, fn func(Spend) error) error
	// Reserve atomically takes a lease on up to want of s's budget in
	// currency, for ttl from now. It grants the smallest of want and, for
	// each spend limit of s in currency (Monthly for now's month, Total),
	// the limit minus the spend minus the unexpired leases; never less
	// than zero (a lease of zero means the budget is spent). A subject
	// without a limit in currency is granted want. Concurrent Reserves,
	// from any number of instances, never grant together more than the
	// room they saw. A zero-amount lease is returned without being stored.
	//
	// Each of rates makes s's spend in its currency count, converted, in
	// the spend that the limits bound (so that a limit bounds the spend
	// on models priced in other currencies).
	Reserve(ctx context.Context, s Subject, currency string, want int64, now time.Time, ttl time.Duration, rates ...Rate) (Lease, error)
	// Extend moves the expiry of the unexpired lease id to until; an
	// expired or released lease is ErrNotFound (its room may be taken:
	// reserve again).
	Extend(ctx context.Context, id string, until time.Time) error
	// Shrink lowers the amount of lease id to amount if it is larger,
	// giving the rest back to the budget at once (a lease closed to new
	// requests keeps only what its requests may still add to the spend).
	// Shrinking an unknown, expired or smaller lease is not an error; a
	// negative amount counts as zero.
	Shrink(ctx context.Context, id string, amount int64) error
	// Release ends lease id. Releasing an unknown or expired lease is not
	// an error. Release a lease only after the records charged against it
	// are counted (Ledger.Flush), or the budget is briefly under-counted.
	Release(ctx context.Context, id string) error
	// Reserved is the sum of s's unexpired leases in currency at now.
	Reserved(ctx context.Context, s Subject, currency string, now time.Time) (int64, error)
}

// Rate converts spend in Currency into the currency of a limit: an amount
// a ≥ 0 counts as ⌈a × Num / Den⌉, exactly. Num and Den are positive
// decimal integers.
type Rate struct {
	// Currency is the currency of the spend converted.
	Currency string
	// Num and Den are the conversion factor's numerator and denominator.
	Num, Den string
}

// Convert returns ⌈a × Num / Den⌉ for a ≥ 0 (a negative a counts as 0),
// saturating at the largest int64; false if Num or Den is malformed.
func (r Rate) Convert(a int64) (int64, bool) {
	num, ok1 := new(big.Int).SetString(r.Num, 10)
	den, ok2 := new(big.Int).SetString(r.Den, 10)
	if !ok1 || !ok2 || num.Sign() <= 0 || den.Sign() <= 0 {
		return 0, false
	}
	n := num.Mul(num, big.NewInt(max(a, 0)))
	n.Add(n, den).Sub(n, big.NewInt(1))
	n.Quo(n, den)
	if !n.IsInt64() {
		return math.MaxInt64, true
	}
	return n.Int64(), true
}

// RateLimits are token buckets shared by every instance of a backend: a
// bucket named key holds up to limit units and refills at limit units per
// window. A bucket nobody used starts full. Implementations document
// their error bound across instances (Badger: exact, one instance).
type RateLimits interface {
	// Take takes n units from bucket key at now if it holds them and
	// returns zero; otherwise it takes nothing and returns how long until
	// it would hold them (n is capped at limit).
	Take(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) (time.Duration, error)
	// Adjust adds n units (negative: takes them) to bucket key, never
	// beyond limit; the level may go below zero, which delays later
	// Takes. It corrects an estimate once a request's usage is known.
	Adjust(ctx context.Context, key string, n, limit int64, window time.Duration, now time.Time) error
}
