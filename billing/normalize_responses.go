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
// The audio_tokens of input_tokens_details and output_tokens_details are
// the audio parts, AudioInput (capped at Input) and AudioOutput (capped at
// Output). The tool calls of a response are in its output items, not its
// usage: see ToolCalls.
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
	var in, od [2]gjson.Result
	members(top[2], []string{"cached_tokens", "audio_tokens"}, in[:])
	members(top[3], []string{"reasoning_tokens", "audio_tokens"}, od[:])
	out.CacheRead = min(count(in[0]), input)
	out.Input = input - out.CacheRead
	out.Output = output
	out.Reasoning = min(count(od[0]), output)
	out.AudioInput = min(count(in[1]), out.Input)
	out.AudioOutput = min(count(od[1]), output)
	return out, nil
}

// NormalizeImages converts the raw JSON of an OpenAI Images answer's
// "usage" object (gpt-image-1 and later) into buckets: input_tokens is
// Input, of which input_tokens_details.image_tokens is ImageInput;
// output_tokens is Output, of which output_tokens_details.image_tokens is
// ImageOutput, or all of it when the answer has no such breakdown (the
// first image models generate only image tokens). Missing fields count as
// zero, negative counts as zero, and the parts are capped at their whole.
func NormalizeImages(usage []byte) (Usage, error) {
	u, err := parseObject(usage)
	if err != nil {
		return Usage{}, err
	}
	var top [len(responsesUsageKeys)]gjson.Result
	members(u, responsesUsageKeys[:], top[:])
	var out Usage
	out.Input, out.Output = count(top[0]), count(top[1])
	out.ImageInput = min(count(top[2].Get("image_tokens")), out.Input)
	out.ImageOutput = out.Output
	if img := top[3].Get("image_tokens"); img.Exists() {
		out.ImageOutput = min(count(img), out.Output)
	}
	return out, nil
}

// The members of a Responses usage object that NormalizeResponses reads.
var responsesUsageKeys = [...]string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
