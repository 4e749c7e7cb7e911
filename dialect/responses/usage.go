package responses

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/internal/usagejson"
)

// NormalizeUsage converts the raw JSON of an OpenAI Responses API
// "usage" object (the JSON body's, or the one in a stream's
// response.completed event) into disjoint buckets.
//
// In this protocol input_tokens is the whole prompt: it includes
// input_tokens_details.cached_tokens, so Input = input_tokens - cache
// reads. output_tokens includes output_tokens_details.reasoning_tokens.
// The Responses API reports no cache writes.
//
// The audio_tokens of input_tokens_details and output_tokens_details are
// the audio parts, AudioInput (capped at Input) and AudioOutput (capped at
// Output). The tool calls of a response are in its output items, not its
// usage: see ToolCalls.
//
// Missing fields count as zero and negative counts are clamped to zero;
// input_tokens is trusted as the total (it selects the price tier), cache
// reads are capped at it, and reasoning tokens at output_tokens.
func NormalizeUsage(usage []byte) (billing.Usage, error) {
	u, err := usagejson.ParseObject(usage)
	if err != nil {
		return billing.Usage{}, err
	}
	var top [len(responsesUsageKeys)]gjson.Result
	usagejson.Members(u, responsesUsageKeys[:], top[:])
	input, output := usagejson.Count(top[0]), usagejson.Count(top[1])
	var out billing.Usage
	var in, od [2]gjson.Result
	usagejson.Members(top[2], []string{"cached_tokens", "audio_tokens"}, in[:])
	usagejson.Members(top[3], []string{"reasoning_tokens", "audio_tokens"}, od[:])
	out.CacheRead = min(usagejson.Count(in[0]), input)
	out.Input = input - out.CacheRead
	out.Output = output
	out.Reasoning = min(usagejson.Count(od[0]), output)
	out.AudioInput = min(usagejson.Count(in[1]), out.Input)
	out.AudioOutput = min(usagejson.Count(od[1]), output)
	return out, nil
}

// The members of a Responses usage object that NormalizeUsage reads.
var responsesUsageKeys = [...]string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
