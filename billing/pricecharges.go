package billing

import (
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// The price rules of the charges beyond plain tokens (see PriceTable):
//
//	"audio":        {"input": "40", "output": "80"}   per million audio tokens
//	"image_tokens": {"input": "10", "output": "40"}   per million image tokens
//	"tools": {"web_search": "0.01", "web_fetch": "0", "file_search": "0.0025",
//	          "code_session": "0.03", "image_generation": "0.04"}   per call
//
// Audio and image tokens are parts of a request's input and output
// tokens: their rate replaces the tier's input or output rate for that
// part. Every field is optional; a charge the usage has and the model's
// price has no rule for is listed in Quote.Unpriced.

// chargeRates are a model's rates for the charges beyond plain tokens.
// A nil rate has no rule.
type chargeRates struct {
	// audioIn and audioOut are in nanos per token.
	audioIn, audioOut *rate
	// imageIn and imageOut are in nanos per token.
	imageIn, imageOut *rate
	// tools are in nanos per call, indexed like Usage.calls.
	tools [5]*rate
}

// toolKinds are the keys of a price file's tools, in Usage.calls order.
var toolKinds = [5]string{ChargeWebSearch, ChargeWebFetch, ChargeFileSearch, ChargeCodeSession, ChargeImageCall}

// parseTokenPair parses an "audio" or "image_tokens" rule: input and
// output prices per million tokens, each optional.
func parseTokenPair(name string, v gjson.Result) (in, out *rate, err error) {
	if !v.IsObject() {
		return nil, nil, fmt.Errorf("%s: must be an object with input and/or output prices per million tokens", name)
	}
	v.ForEach(func(k, f gjson.Result) bool {
		var dst **rate
		switch k.Str {
		case "input":
			dst = &in
		case "output":
			dst = &out
		default:
			err = fmt.Errorf("%s: unknown field %q", name, k.Str)
			return false
		}
		d, perr := parsePrice(f)
		if perr != nil {
			err = fmt.Errorf("%s.%s: %w", name, k.Str, perr)
			return false
		}
		r := newRate(d.Mul(perMillionToNanosPerToken))
		*dst = &r
		return true
	})
	if err == nil && in == nil && out == nil {
		err = fmt.Errorf("%s: set input and/or output", name)
	}
	return in, out, err
}

// parseTools parses a model's tools: a price per call by tool kind.
func parseTools(v gjson.Result) (tools [5]*rate, err error) {
	if !v.IsObject() {
		return tools, errors.New("tools: must be an object of tool kinds to prices per call")
	}
	v.ForEach(func(k, f gjson.Result) bool {
		i := -1
		for j, kind := range toolKinds {
			if k.Str == kind {
				i = j
			}
		}
		if i < 0 {
			err = fmt.Errorf("tools: unknown tool %q (known: web_search, web_fetch, file_search, code_session, image_generation)", k.Str)
			return false
		}
		d, perr := parsePrice(f)
		if perr != nil {
			err = fmt.Errorf("tools.%s: %w", k.Str, perr)
			return false
		}
		r := newRate(d.Mul(decNanosPerUnit))
		tools[i] = &r
		return true
	})
	return tools, err
}

// chargeTerms appends to terms the price of u's charges beyond plain
// tokens, and returns them with the tokens left at the tier's input and
// output rates and the charges that had no rule. perImage is set when the
// model's per-image price covers the request (an images answer of a model
// without image token prices): its image tokens are then neither priced
// nor unpriced.
func (cr *chargeRates) chargeTerms(terms []term, u Usage, perImage bool) (out []term, textIn, textOut int64, unpriced []string) {
	textIn, textOut = max(u.Input, 0), max(u.Output, 0)
	if !u.hasCharges() {
		return terms, textIn, textOut, nil
	}
	part := func(n int64, whole *int64, r *rate, kind string, covered bool) {
		n = min(max(n, 0), *whole)
		switch {
		case n == 0:
		case r != nil:
			*whole -= n
			terms = append(terms, term{n, *r})
		case covered:
			*whole -= n
		default:
			// Billed at the text rate, and short of the provider's.
			unpriced = append(unpriced, kind)
		}
	}
	part(u.AudioInput, &textIn, cr.audioIn, ChargeAudioInput, false)
	part(u.AudioOutput, &textOut, cr.audioOut, ChargeAudioOutput, false)
	part(u.ImageInput, &textIn, cr.imageIn, ChargeImageInput, perImage)
	part(u.ImageOutput, &textOut, cr.imageOut, ChargeImageOutput, perImage)
	for i, c := range u.calls() {
		switch {
		case c.n <= 0:
		case cr.tools[i] != nil:
			terms = append(terms, term{c.n, *cr.tools[i]})
		default:
			unpriced = append(unpriced, c.kind)
		}
	}
	return terms, textIn, textOut, unpriced
}

// imageTokensPriced reports whether u's image tokens are priced by the
// model's image token rates, which then replace its per-image price.
func (cr *chargeRates) imageTokensPriced(u Usage) bool {
	return (cr.imageIn != nil || cr.imageOut != nil) && (u.ImageInput > 0 || u.ImageOutput > 0)
}

// ChargePrices are a model's prices of the charges beyond plain tokens,
// in the price file's units; empty strings have no rule.
type ChargePrices struct {
	// AudioInput and AudioOutput are per million audio tokens.
	AudioInput  string `json:"audio_input,omitempty"`
	AudioOutput string `json:"audio_output,omitempty"`
	// ImageInput and ImageOutput are per million image tokens.
	ImageInput  string `json:"image_input,omitempty"`
	ImageOutput string `json:"image_output,omitempty"`
	// Tools maps a tool kind to its price per call.
	Tools map[string]string `json:"tools,omitempty"`
}

// view returns cr in the price file's units, nil when it has no rule.
func (cr *chargeRates) view() *ChargePrices {
	perMillion := func(r *rate) string {
		if r == nil {
			return ""
		}
		return r.d.Div(perMillionToNanosPerToken).String()
	}
	v := &ChargePrices{AudioInput: perMillion(cr.audioIn), AudioOutput: perMillion(cr.audioOut),
		ImageInput: perMillion(cr.imageIn), ImageOutput: perMillion(cr.imageOut)}
	for i, r := range cr.tools {
		if r != nil {
			if v.Tools == nil {
				v.Tools = map[string]string{}
			}
			v.Tools[toolKinds[i]] = r.d.Div(decNanosPerUnit).String()
		}
	}
	if v.Tools == nil && v.AudioInput == "" && v.AudioOutput == "" && v.ImageInput == "" && v.ImageOutput == "" {
		return nil
	}
	return v
}
