package billing

import "github.com/tidwall/gjson"

// NormalizeResponses converts the raw JSON of an OpenAI Responses API
// "usage" object (the JSON body's, or the one in a stream's
// response.completed event) into disjoint buckets.
//
// In this protocol input_tokens is the whole prompt: it includes
// input_tokens_details.cached_tokens, so Input = input_tokens - cache
// reads. output_tokens includes output_tokens_details.reasoning_tokens.
// The Responses API reports no cache writes.
//
// Missing fields count as zero and negative counts are clamped to zero;
// input_tokens is trusted as the total (it selects the price tier), cache
// reads are capped at it, and reasoning tokens at output_tokens.
func NormalizeResponses(usage []byte) (Usage, error) {
	u, err := parseObject(usage)
	if err != nil {
		return Usage{}, err
	}
	var top [len(responsesUsageKeys)]gjson.Result
	members(u, responsesUsageKeys[:], top[:])
	input, output := count(top[0]), count(top[1])
	var out Usage
	out.CacheRead = min(count(top[2].Get("cached_tokens")), input)
	out.Input = input - out.CacheRead
	out.Output = output
	out.Reasoning = min(count(top[3].Get("reasoning_tokens")), output)
	return out, nil
}

// The members of a Responses usage object that NormalizeResponses reads.
var responsesUsageKeys = [...]string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
