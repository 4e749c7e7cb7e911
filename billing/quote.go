package billing

import (
	"math"

	"github.com/shopspring/decimal"
)

// Quote is the price of one request or task.
type Quote struct {
	// Priced is false when the model has no price; Cost is then zero.
	Priced bool `json:"priced"`
	// Tier is the index of the token tier that applied, or -1 if none did.
	Tier int `json:"tier"`
	// Currency is the currency of Cost ("" when unpriced).
	Currency string `json:"currency,omitempty"`
	// Cost is the price, rounded once, half to even, to nano units.
	Cost Amount `json:"cost"`
	// Unpriced lists the charges of the usage that the model's price has
	// no rule for (see Record.Unpriced).
	Unpriced []string `json:"unpriced,omitempty"`
}

// units are the task quantities a price may apply to, and whether the
// request is (to be) answered, which a request price applies to.
type units struct {
	images, videoMillis, tasks int64
	answered                   bool
}

// Quote prices token usage u of model. The request's total prompt tokens
// select one tier, whose input and output prices then apply to all of its
// input and output tokens:
//
//	cost = (Input×in + (CacheCreation−CacheCreation1h)×creation×in
//	        + CacheCreation1h×creation_1h×in + CacheRead×read×in + Output×out) / 1e6
//
// Reasoning tokens are part of Output. Audio and image tokens, the parts
// of Input and Output that the model's audio and image_tokens rules
// price, take those rates instead of the tier's, and tool calls cost
// their per-call price (see pricecharges.go); a charge without a rule is
// listed in Quote.Unpriced. The cost is computed exactly and rounded once
// to an Amount. Negative counts count as zero.
//
// It prices a request about to be made, as admission estimates it: a
// request price applies.
func (pt *PriceTable) Quote(model string, u Usage) Quote {
	return pt.quote(model, u, units{answered: true}, "")
}

// QuoteTask prices a task of model that succeeds with the given number of
// images and milliseconds of video, as an estimate before it runs.
func (pt *PriceTable) QuoteTask(model string, images int, videoMillis int64) Quote {
	return pt.quote(model, Usage{}, units{images: int64(images), videoMillis: videoMillis, tasks: 1}, "")
}

// QuoteRecord prices a settled request or task at the price of the first
// of rec.Deployment, rec.ServedModel and rec.Model that has one (the
// deployment that answered, the fallback model that served, the model
// asked for): its token usage plus, by the model's task price, rec.Images × the per-image price, rec.VideoMillis ×
// the per-second price, or the per-task price if the outcome is OutcomeOK;
// all of it times the multiplier of rec.ServiceTier when the model's
// service_tiers list it. An images answer that reported image tokens is
// priced by them instead of per image when the model has image_tokens
// prices.
//
// A request that the gateway or the upstream failed to answer at all
// (Unbilled outcomes) is recorded with its estimated usage and tier, at no
// cost.
func (pt *PriceTable) QuoteRecord(rec *Record) Quote {
	un := units{images: int64(rec.Images), videoMillis: rec.VideoMillis}
	if rec.Outcome == OutcomeOK {
		un.tasks, un.answered = 1, true
	}
	q := pt.quote(pt.priceModel(rec), rec.Usage, un, rec.ServiceTier)
	if Unbilled(rec.Outcome) {
		q.Cost, q.Unpriced = 0, nil
	}
	return q
}

// priceModel is the price file entry that prices rec.
func (pt *PriceTable) priceModel(rec *Record) string {
	for _, m := range [...]string{rec.Deployment, rec.ServedModel} {
		if m != "" && pt.lookup(m) != nil {
			return m
		}
	}
	return rec.Model
}

// Unbilled reports the outcomes recorded at no cost: an upstream that did
// not answer within its timeout, upstreams that could not be reached after
// the request was sent, a request interrupted by the gateway's own stop,
// a background response never seen finished, and an answer withheld
// because its record was not written in time. Their usage is kept (an
// estimate, none for a background response) so that an operator can
// reconcile it with the provider's bill.
func Unbilled(outcome string) bool {
	return outcome == OutcomeTimeout || outcome == OutcomeUnavailable || outcome == OutcomeInterrupted ||
		outcome == OutcomeUnfinished || outcome == OutcomeWithheld
}

// quote prices usage and units of model served at serviceTier.
func (pt *PriceTable) quote(model string, u Usage, un units, serviceTier string) Quote {
	mp := pt.lookup(model)
	if mp == nil {
		return Quote{Tier: -1}
	}
	var buf [16]term
	terms := buf[:0]
	// An images answer is priced by its image tokens when the model has
	// image token prices and the answer reported some, else per image.
	perImage := mp.unit == unitImage && un.images > 0 && !mp.charges.imageTokensPriced(u)
	terms, textIn, textOut, unpriced := mp.charges.chargeTerms(terms, u, perImage)
	t := -1
	if len(mp.tiers) > 0 {
		t = mp.tierFor(u.PromptTotal())
		tr := &mp.tiers[t]
		h1 := min(max(u.CacheCreation1h, 0), max(u.CacheCreation, 0))
		terms = append(terms, term{textIn, tr.input}, term{u.CacheCreation - h1, tr.creation}, term{h1, tr.creation1h},
			term{u.CacheRead, tr.read}, term{textOut, tr.output})
	}
	terms, unpriced = mp.units.terms(terms, u, un.answered, len(mp.tiers) > 0, unpriced)
	switch mp.unit {
	case unitImage:
		if perImage {
			terms = append(terms, term{un.images, mp.unitRate})
		}
	case unitVideoSecond:
		terms = append(terms, term{un.videoMillis, mp.unitRate})
	case unitVideoTask:
		terms = append(terms, term{un.tasks, mp.unitRate})
	}
	q := Quote{Priced: true, Tier: t, Currency: mp.currency, Unpriced: unpriced}
	if mult, ok := mp.serviceTiers[serviceTier]; ok && serviceTier != "" {
		q.Cost = sumTimes(terms, mult)
	} else {
		q.Cost = sum(terms)
	}
	return q
}

// tierFor returns the index of the tier that covers prompt tokens.
func (mp *modelPrice) tierFor(prompt int64) int {
	for i, t := range mp.tiers {
		if t.upTo == 0 || prompt <= t.upTo {
			return i
		}
	}
	return len(mp.tiers) - 1
}

// term is a quantity and its rate.
type term struct {
	n int64
	r rate
}

// sum returns Σ n×rate over terms, rounded once to an Amount. It uses int64
// arithmetic when every rate is a whole number of nanos and nothing
// overflows, which is exact; otherwise it computes with decimals.
func sum(terms []term) Amount {
	var total int64
	fast := true
	for _, t := range terms {
		n := max(t.n, 0)
		if n == 0 {
			continue
		}
		if !t.r.exact || t.r.i > 0 && n > math.MaxInt64/t.r.i {
			fast = false
			break
		}
		p := n * t.r.i
		if total > math.MaxInt64-p {
			fast = false
			break
		}
		total += p
	}
	if fast {
		return Amount(total)
	}
	d := decimal.Zero
	for _, t := range terms {
		if n := max(t.n, 0); n > 0 {
			d = d.Add(decimal.NewFromInt(n).Mul(t.r.d))
		}
	}
	return amountFromNanos(d)
}

// sumTimes returns Σ n×rate over terms times mult, computed exactly and
// rounded once to an Amount.
func sumTimes(terms []term, mult decimal.Decimal) Amount {
	d := decimal.Zero
	for _, t := range terms {
		if n := max(t.n, 0); n > 0 {
			d = d.Add(decimal.NewFromInt(n).Mul(t.r.d))
		}
	}
	return amountFromNanos(d.Mul(mult))
}
