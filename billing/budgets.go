package billing

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/store"
)

// Budgets enforces the spend and rate limits of users and API keys. It
// keeps every subject's spend of the current month and of all time in
// memory, loaded from the backend at start (store.Budgets) and updated as
// requests settle, so admission never touches the backend. The process
// must be the only writer of its backend, and one Budgets must serve it
// (keep it across config reloads, as the Ledger); on a backend shared by
// several instances, Share makes it admit requests against leased slices
// of the budgets and shared rate limits instead (shared.go).
//
// Admission reserves each request's estimated cost and tokens; settling
// replaces the estimate by the actual cost. A request is admitted only
// while spend plus reservations are below the limit, so concurrent requests
// overspend by at most one request's cost when estimates hold.
type Budgets struct {
	s store.Budgets

	// Now returns the current time. Tests replace it; set it before use.
	Now func() time.Time

	setMu    sync.Mutex // serializes SetLimits and DeleteLimits
	mu       sync.Mutex // guards accounts
	accounts map[subjectKey]*account

	sh *shared // set by Share
}

// subjectKey identifies a user or a key.
type subjectKey struct {
	scope Scope
	id    string
}

// account is the in-memory state of one subject.
type account struct {
	limits    Limits
	hasLimits bool
	spent     map[spendSlot]Amount
	reserved  map[string]Amount // by currency
	rpm, tpm  bucket
	inflight  int64 // requests admitted with parallel set and not yet ended
}

// spendSlot is a currency and a period (a month or periodTotal).
type spendSlot struct {
	currency, period string
}

// NewBudgets loads the limits and the current spend kept in r.
func NewBudgets(ctx context.Context, r store.Budgets) (*Budgets, error) {
	b := &Budgets{s: r, Now: time.Now, accounts: map[subjectKey]*account{}}
	err := r.Limits(ctx, func(s store.Subject, lim store.Limits) error {
		acc := b.account(subjectKey{Scope(s.Scope), s.ID})
		acc.limits, acc.hasLimits = limitsFromStore(lim), true
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading limits: %w", err)
	}
	// Monthly counters expire a few months after their month, so loading all
	// of them is cheap, and it does not depend on the clock.
	err = r.Spend(ctx, func(sp store.Spend) error {
		b.account(subjectKey{Scope(sp.Scope), sp.ID}).spent[spendSlot{sp.Currency, sp.Period}] = Amount(sp.Amount)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading spend: %w", err)
	}
	return b, nil
}

// account returns the account of sk, creating it. b.mu must be held (or b
// not yet shared).
func (b *Budgets) account(sk subjectKey) *account {
	acc := b.accounts[sk]
	if acc == nil {
		acc = &account{spent: map[spendSlot]Amount{}, reserved: map[string]Amount{}}
		b.accounts[sk] = acc
	}
	return acc
}

// hold is what an admitted request reserved.
type hold struct {
	subjects []subjectKey
	currency string
	cost     Amount
	tokens   int64
	pt       *PriceTable // converts its cost into limits' currencies

	leases []heldLease // shared budgets: the slices it was admitted against
	rates  []rateHeld  // shared rate limits: the units it took

	// parallel is set while the request counts in its subjects' requests
	// in flight (max_parallel_requests); b.mu guards it.
	parallel bool
}

// subjectsOf lists the accounts that s's requests count against.
func subjectsOf(s Subject) []subjectKey {
	out := make([]subjectKey, 0, 3)
	if s.Team != "" {
		out = append(out, subjectKey{ScopeTeam, s.Team})
	}
	if s.User != "" {
		out = append(out, subjectKey{ScopeUser, s.User})
	}
	if s.KeyID != "" {
		out = append(out, subjectKey{ScopeKey, s.KeyID})
	}
	return out
}

// admit checks the limits of the subjects against a request estimated at
// cost (in currency) and tokens, and reserves them if it may go ahead.
// pt's currency is the currency of limits that name none, and its rates
// convert costs into limits' currencies. A parallel request counts in its
// subjects' requests in flight until it ends or endParallel.
func (b *Budgets) admit(subjects []subjectKey, pt *PriceTable, currency string, cost Amount, tokens int64, parallel bool) (*hold, *apierror.Error) {
	if b.sh != nil {
		if parallel {
			if err := b.takeParallel(subjects); err != nil {
				return nil, err
			}
		}
		h, err := b.admitShared(subjects, pt, currency, cost, tokens)
		if err != nil {
			if parallel {
				b.endParallel(&hold{subjects: subjects, parallel: true})
			}
			return nil, err
		}
		h.parallel = parallel
		return h, nil
	}
	now := b.Now()
	month := monthOf(now)
	tokens = clampTokens(tokens)
	b.mu.Lock()
	defer b.mu.Unlock()
	accs := make([]*account, len(subjects))
	for i, sk := range subjects {
		accs[i] = b.account(sk)
		if err := accs[i].checkSpend(sk, month, pt, currency); err != nil {
			return nil, err
		}
	}
	if parallel {
		for i, sk := range subjects {
			if err := accs[i].checkParallel(sk); err != nil {
				return nil, err
			}
		}
	}
	var limited *apierror.Error
	var wait time.Duration
	for i, sk := range subjects {
		if what, w := accs[i].checkRate(now, tokens); w > 0 && w > wait {
			wait = w
			limited = rateLimited(sk, what, w)
		}
	}
	if limited != nil {
		return nil, limited
	}
	for _, acc := range accs {
		if currency != "" {
			acc.reserved[currency] += cost
		}
		if lim := acc.limits.RPM; lim > 0 {
			acc.rpm.give(-1, lim)
		}
		if lim := acc.limits.TPM; lim > 0 {
			acc.tpm.give(-tokens, lim)
		}
		if parallel {
			acc.inflight++
		}
	}
	return &hold{subjects: subjects, currency: currency, cost: cost, tokens: tokens, pt: pt, parallel: parallel}, nil
}

// clampTokens bounds a token count for the rate buckets.
func clampTokens(n int64) int64 { return min(max(n, 0), maxRate) }

// checkRate refills the account's rate buckets and returns how long the
// request must wait, and for which limit, or zero if it may go now.
func (acc *account) checkRate(now time.Time, tokens int64) (string, time.Duration) {
	if !acc.hasLimits {
		return "", 0
	}
	var what string
	var wait time.Duration
	if lim := acc.limits.RPM; lim > 0 {
		acc.rpm.refill(now, lim)
		if w := acc.rpm.wait(1, lim); w > wait {
			what, wait = fmt.Sprintf("%d requests per minute", lim), w
		}
	}
	if lim := acc.limits.TPM; lim > 0 {
		acc.tpm.refill(now, lim)
		need := min(max(tokens, 1), lim)
		if w := acc.tpm.wait(need, lim); w > wait {
			what, wait = fmt.Sprintf("%d tokens per minute", lim), w
		}
	}
	return what, wait
}

// settle ends hold h with the settled record rec: the reservation is
// dropped and, if counted, rec's cost becomes spend and its tokens replace
// the estimate in the token rate.
func (b *Budgets) settle(h *hold, rec *Record, counted bool) {
	if b.sh != nil {
		b.endParallel(h)
		b.settleShared(h, rec, counted)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endParallelLocked(h)
	for _, sk := range h.subjects {
		acc := b.account(sk)
		acc.unreserve(h)
		if !counted {
			continue
		}
		acc.addSpend(rec, b.Now())
		if lim := acc.limits.TPM; lim > 0 && acc.tpm.started {
			acc.tpm.give(h.tokens-clampTokens(rec.Usage.Total()), lim)
		}
	}
}

// release drops hold h and, when rates is set, gives back its request and
// tokens.
func (b *Budgets) release(h *hold, rates bool) {
	if b.sh != nil {
		b.endParallel(h)
		b.releaseShared(h, rates)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.endParallelLocked(h)
	for _, sk := range h.subjects {
		acc := b.account(sk)
		acc.unreserve(h)
		if !rates {
			continue
		}
		if lim := acc.limits.RPM; lim > 0 && acc.rpm.started {
			acc.rpm.give(1, lim)
		}
		if lim := acc.limits.TPM; lim > 0 && acc.tpm.started {
			acc.tpm.give(h.tokens, lim)
		}
	}
}

// unreserve gives back the cost that hold h reserved in the account: what
// admit added to its reservations, which settle and release both drop.
func (acc *account) unreserve(h *hold) {
	if h.currency != "" {
		acc.reserved[h.currency] -= h.cost
	}
}

// record counts rec, settled without a reservation, in its subjects.
func (b *Budgets) record(rec *Record) {
	now := b.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, sk := range subjectsOf(Subject{User: rec.User, KeyID: rec.KeyID, Team: rec.Team}) {
		acc := b.account(sk)
		acc.addSpend(rec, now)
		if b.sh != nil {
			b.sh.charge(sk, rec)
		}
		if lim := acc.limits.TPM; lim > 0 && b.sh != nil {
			b.sh.owe(rateKey("tpm", sk), clampTokens(rec.Usage.Total()), lim)
		} else if lim > 0 {
			acc.tpm.refill(now, lim)
			acc.tpm.give(-clampTokens(rec.Usage.Total()), lim)
		}
	}
}

// addSpend adds rec's cost to the account's spend, and forgets months
// other than the current one and rec's.
func (acc *account) addSpend(rec *Record, now time.Time) {
	if !rec.Priced || rec.Cost == 0 {
		return
	}
	month := monthOf(rec.Time)
	for _, slot := range [2]spendSlot{{rec.Currency, month}, {rec.Currency, periodTotal}} {
		acc.spent[slot] = acc.spent[slot].addSat(rec.Cost)
	}
	if len(acc.spent) <= 8 {
		return
	}
	current := monthOf(now)
	for slot := range acc.spent {
		if slot.period != periodTotal && slot.period != current && slot.period != month {
			delete(acc.spent, slot)
		}
	}
}

// Status returns the limits and spend of id in scope.
func (b *Budgets) Status(scope Scope, id string) BudgetStatus {
	month := monthOf(b.Now())
	st := BudgetStatus{Month: month, Spend: []CurrencySpend{}}
	b.mu.Lock()
	defer b.mu.Unlock()
	acc := b.accounts[subjectKey{scope, id}]
	if acc == nil {
		return st
	}
	if acc.hasLimits {
		lim := acc.limits
		st.Limits = &lim
	}
	byCur := map[string]*CurrencySpend{}
	get := func(cur string) *CurrencySpend {
		cs := byCur[cur]
		if cs == nil {
			cs = &CurrencySpend{Currency: cur}
			byCur[cur] = cs
		}
		return cs
	}
	for slot, amt := range acc.spent {
		switch slot.period {
		case month:
			get(slot.currency).Month = amt
		case periodTotal:
			get(slot.currency).Total = amt
		}
	}
	for cur, amt := range acc.reserved {
		if amt != 0 {
			get(cur).Reserved = amt
		}
	}
	for _, cs := range byCur {
		st.Spend = append(st.Spend, *cs)
	}
	sort.Slice(st.Spend, func(i, j int) bool { return st.Spend[i].Currency < st.Spend[j].Currency })
	return st
}

// describe names a subject in error messages.
func describe(sk subjectKey) string {
	switch sk.scope {
	case ScopeUser:
		return "your account"
	case ScopeTeam:
		return "your team"
	}
	return "this API key"
}

// overQuota is the error of a request over a spend limit.
func overQuota(sk subjectKey, period string, lim Amount, currency string) *apierror.Error {
	msg := fmt.Sprintf("You exceeded your current quota: the %s spend limit of %s (%s %s) is reached.", period, describe(sk), lim, currency)
	return apierror.New(http.StatusTooManyRequests, apierror.TypeInsufficient, "insufficient_quota", msg)
}

// rateLimited is the error of a request over a rate limit.
func rateLimited(sk subjectKey, what string, wait time.Duration) *apierror.Error {
	secs := retryAfterSeconds(wait)
	msg := fmt.Sprintf("Rate limit reached for %s: %s. Please try again in %ds.", describe(sk), what, secs)
	e := apierror.New(http.StatusTooManyRequests, apierror.TypeRateLimit, "rate_limit_exceeded", msg)
	e.RetryAfter = secs
	return e
}
