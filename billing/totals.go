package billing

import "github.com/caddy-air/caddy-air/store"

// Totals sums ledger records. Aggregates are stored as Totals and reports
// are made of them.
type Totals struct {
	// Requests counts the records.
	Requests int64 `json:"requests"`
	// Unpriced counts the records of models without a price.
	Unpriced int64 `json:"unpriced"`
	// UnpricedCharges counts the records of priced models with a charge
	// the price file has no rule for (Record.Unpriced): their cost is
	// short of the provider's.
	UnpricedCharges int64 `json:"unpriced_charges,omitempty"`
	// Usage sums the token usage, bucket by bucket.
	Usage Usage `json:"usage"`
	// Images sums the images generated.
	Images int64 `json:"images"`
	// VideoMillis sums the milliseconds of video generated.
	VideoMillis int64 `json:"video_ms"`
	// Cost sums the cost, exactly.
	Cost Amount `json:"cost"`
	// Sources counts the records by how their usage was obtained.
	Sources map[Source]int64 `json:"sources,omitempty"`
	// Outcomes counts the records by outcome.
	Outcomes map[string]int64 `json:"outcomes,omitempty"`
}

// add counts rec in t. Every sum saturates at the bounds of int64
// instead of wrapping (Amount.addSat, store.AddSat), as the stores' do.
func (t *Totals) add(rec *Record) {
	t.Requests = store.AddSat(t.Requests, 1)
	if !rec.Priced {
		t.Unpriced = store.AddSat(t.Unpriced, 1)
	}
	if len(rec.Unpriced) > 0 {
		t.UnpricedCharges = store.AddSat(t.UnpricedCharges, 1)
	}
	t.Usage = t.Usage.Add(rec.Usage)
	t.Images = store.AddSat(t.Images, int64(rec.Images))
	t.VideoMillis = store.AddSat(t.VideoMillis, rec.VideoMillis)
	t.Cost = t.Cost.addSat(rec.Cost)
	if rec.Source != "" {
		if t.Sources == nil {
			t.Sources = map[Source]int64{}
		}
		t.Sources[rec.Source] = store.AddSat(t.Sources[rec.Source], 1)
	}
	if rec.Outcome != "" {
		if t.Outcomes == nil {
			t.Outcomes = map[string]int64{}
		}
		t.Outcomes[rec.Outcome] = store.AddSat(t.Outcomes[rec.Outcome], 1)
	}
}

// merge adds o to t, saturating like add.
func (t *Totals) merge(o *Totals) {
	t.Requests = store.AddSat(t.Requests, o.Requests)
	t.Unpriced = store.AddSat(t.Unpriced, o.Unpriced)
	t.UnpricedCharges = store.AddSat(t.UnpricedCharges, o.UnpricedCharges)
	t.Usage = t.Usage.Add(o.Usage)
	t.Images = store.AddSat(t.Images, o.Images)
	t.VideoMillis = store.AddSat(t.VideoMillis, o.VideoMillis)
	t.Cost = t.Cost.addSat(o.Cost)
	for k, v := range o.Sources {
		if t.Sources == nil {
			t.Sources = map[Source]int64{}
		}
		t.Sources[k] = store.AddSat(t.Sources[k], v)
	}
	for k, v := range o.Outcomes {
		if t.Outcomes == nil {
			t.Outcomes = map[string]int64{}
		}
		t.Outcomes[k] = store.AddSat(t.Outcomes[k], v)
	}
}

// totalsFromStore returns the totals of a storage shape.
func totalsFromStore(s *store.Totals) Totals {
	t := Totals{
		Requests: s.Requests, Unpriced: s.Unpriced, UnpricedCharges: s.UnpricedCharges, Usage: Usage(s.Usage),
		Images: s.Images, VideoMillis: s.VideoMillis, Cost: Amount(s.Cost), Outcomes: s.Outcomes,
	}
	for k, v := range s.Sources {
		if t.Sources == nil {
			t.Sources = map[Source]int64{}
		}
		t.Sources[Source(k)] = v
	}
	return t
}
