package billing

import "sort"

// ModelPrices is one model's prices as the price table loaded them, in
// the price file's units: token prices per million tokens, task prices
// per image, per second of video or per task. Amounts are exact decimal
// strings.
type ModelPrices struct {
	// Pattern is the model id or glob.
	Pattern string `json:"pattern"`
	// Currency is the currency of every price.
	Currency string `json:"currency"`
	// Tiers are the token tiers, in order; empty for a task price only.
	Tiers []TierPrices `json:"tiers,omitempty"`
	// Embedding is set when the model has an embedding price (its one
	// tier's input price).
	Embedding bool `json:"embedding,omitempty"`
	// Cache holds the cache multipliers of the tiers' input price.
	Cache CachePrices `json:"cache"`
	// ServiceTiers maps a service tier to its multiplier of the whole
	// price.
	ServiceTiers map[string]string `json:"service_tiers,omitempty"`
	// Task is "image", "video_second" or "video_task" when the model has
	// a task price, and TaskPrice that price.
	Task      string `json:"task,omitempty"`
	TaskPrice string `json:"task_price,omitempty"`
	// Charges are the prices of audio and image tokens and of tool calls,
	// nil when the model has none.
	Charges *ChargePrices `json:"charges,omitempty"`
	// Units are the prices of characters, audio seconds, search units and
	// requests, nil when the model has none.
	Units *UnitPrices `json:"units,omitempty"`
}

// TierPrices is one token tier.
type TierPrices struct {
	// UpTo is the most prompt tokens the tier covers; 0 is open-ended.
	UpTo int64 `json:"up_to,omitempty"`
	// Input and Output are prices per million tokens.
	Input  string `json:"input"`
	Output string `json:"output"`
}

// CachePrices are the multipliers of a tier's input price for cache
// writes (5 minutes and 1 hour) and reads.
type CachePrices struct {
	Creation   string `json:"creation"`
	Creation1h string `json:"creation_1h"`
	Read       string `json:"read"`
}

// Models lists the table's models as loaded, exact ids first and then
// globs, each in name order.
func (pt *PriceTable) Models() []ModelPrices {
	if pt == nil {
		return nil
	}
	var exact, globs []ModelPrices
	for _, mp := range pt.exact {
		exact = append(exact, mp.view())
	}
	for _, mp := range pt.globs {
		globs = append(globs, mp.view())
	}
	for _, l := range [][]ModelPrices{exact, globs} {
		sort.Slice(l, func(i, j int) bool { return l[i].Pattern < l[j].Pattern })
	}
	return append(exact, globs...)
}

// view returns mp in the price file's units.
func (mp *modelPrice) view() ModelPrices {
	perMillion := func(r rate) string { return r.d.Div(perMillionToNanosPerToken).String() }
	v := ModelPrices{Pattern: mp.pattern, Currency: mp.currency, Embedding: mp.embedding,
		Cache: CachePrices{Creation: mp.cache.creation.String(), Creation1h: mp.cache.creation1h.String(), Read: mp.cache.read.String()}}
	for _, t := range mp.tiers {
		v.Tiers = append(v.Tiers, TierPrices{UpTo: t.upTo, Input: perMillion(t.input), Output: perMillion(t.output)})
	}
	v.Charges = mp.charges.view()
	v.Units = mp.units.view()
	for name, m := range mp.serviceTiers {
		if v.ServiceTiers == nil {
			v.ServiceTiers = map[string]string{}
		}
		v.ServiceTiers[name] = m.String()
	}
	switch mp.unit {
	case unitImage:
		v.Task, v.TaskPrice = "image", mp.unitRate.d.Div(decNanosPerUnit).String()
	case unitVideoSecond:
		v.Task, v.TaskPrice = "video_second", mp.unitRate.d.Div(perSecondToNanosPerMilli).String()
	case unitVideoTask:
		v.Task, v.TaskPrice = "video_task", mp.unitRate.d.Div(decNanosPerUnit).String()
	}
	return v
}
