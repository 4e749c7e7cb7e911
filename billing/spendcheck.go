package billing

import "github.com/caddy-air/caddy-air/apierror"

// checkSpend returns an insufficient_quota error if a spend limit of the
// account is reached, counting its spend and reservations in every
// currency, converted by pt's rates into the limit's; and an
// unconvertible error if they, or the request's currency, do not convert.
func (acc *account) checkSpend(sk subjectKey, month string, pt *PriceTable, currency string) *apierror.Error {
	if !acc.hasLimits || acc.limits.Monthly == 0 && acc.limits.Total == 0 {
		return nil
	}
	cur := acc.limits.Currency
	if cur == "" {
		cur = pt.Currency()
	}
	if currency != "" && currency != cur {
		if _, ok := pt.factor(currency, cur); !ok {
			return unconvertible(sk, cur, currency)
		}
	}
	var spentMonth, spentTotal Amount
	var buf [4]string
	for _, c := range acc.currencies(buf[:0]) {
		f, ok := pt.factor(c, cur)
		if !ok {
			return unconvertible(sk, cur, c)
		}
		reserved := acc.reserved[c]
		spentMonth = spentMonth.addSat(f.apply(acc.spent[spendSlot{c, month}].addSat(reserved)))
		spentTotal = spentTotal.addSat(f.apply(acc.spent[spendSlot{c, periodTotal}].addSat(reserved)))
	}
	if lim := acc.limits.Monthly; lim > 0 && spentMonth >= lim {
		return overQuota(sk, "monthly", lim, cur)
	}
	if lim := acc.limits.Total; lim > 0 && spentTotal >= lim {
		return overQuota(sk, "total", lim, cur)
	}
	return nil
}

// currencies appends to out the currencies the account has spend or
// reservations in (each once; a few at most).
func (acc *account) currencies(out []string) []string {
	add := func(c string) {
		for _, o := range out {
			if o == c {
				return
			}
		}
		out = append(out, c)
	}
	for slot, a := range acc.spent {
		if a != 0 {
			add(slot.currency)
		}
	}
	for c, a := range acc.reserved {
		if a != 0 {
			add(c)
		}
	}
	return out
}
