package openai

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/internal/usagejson"
)

// NormalizeUsage converts the raw JSON of an OpenAI chat completions
// "usage" object into disjoint buckets. The same wire protocol is spoken by
// DashScope's OpenAI-compatible mode, whose cache fields are accepted too.
//
// In this protocol prompt_tokens is the whole prompt: it includes the cache
// reads (prompt_tokens_details.cached_tokens) and the cache writes, so
// Input = prompt_tokens - cache reads - cache writes. completion_tokens
// includes completion_tokens_details.reasoning_tokens.
//
// Cache writes are taken from the first of these that is present, so that a
// payload carrying several of them is never counted twice:
//
//	prompt_tokens_details.cache_write_tokens                      (OpenAI)
//	prompt_tokens_details.cache_creation_input_tokens             (DashScope)
//	prompt_tokens_details.cache_creation.cache_creation_input_tokens
//	prompt_tokens_details.cache_creation.ephemeral_5m_input_tokens
//	  + prompt_tokens_details.cache_creation.ephemeral_1h_input_tokens
//	cache_creation_input_tokens, then cache_creation.ephemeral_*  (top level)
//
// Of the cache writes, the ephemeral_1h_input_tokens of a cache_creation
// breakdown (in prompt_tokens_details, else at the top level) are the
// 1-hour writes, CacheCreation1h, capped at the cache writes.
//
// prompt_tokens_details.audio_tokens and
// completion_tokens_details.audio_tokens are the audio parts of the prompt
// and the completion: AudioInput, capped at Input (the prompt's uncached
// part), and AudioOutput, capped at Output.
//
// Missing fields count as zero. Negative counts are clamped to zero, and the
// buckets never exceed what the upstream billed: prompt_tokens is trusted as
// the total (it selects the price tier), cache reads are capped at it, cache
// writes at what remains, and reasoning tokens at completion_tokens.
func NormalizeUsage(usage []byte) (billing.Usage, error) {
	u, err := usagejson.ParseObject(usage)
	if err != nil {
		return billing.Usage{}, err
	}
	var top [len(openAIUsageKeys)]gjson.Result
	usagejson.Members(u, openAIUsageKeys[:], top[:])
	prompt, completion, details, complDetails := usagejson.Count(top[0]), usagejson.Count(top[1]), top[2], top[3]
	var det [len(openAIDetailKeys)]gjson.Result
	usagejson.Members(details, openAIDetailKeys[:], det[:])
	cached := usagejson.Count(det[0])
	created, ok := usagejson.FirstPresent(det[1], det[2], det[3].Get("cache_creation_input_tokens"))
	if !ok {
		created, ok = usagejson.Ephemeral(det[3])
	}
	if !ok {
		created, ok = usagejson.FirstPresent(top[4])
	}
	if !ok {
		created, _ = usagejson.Ephemeral(top[5])
	}

	var out billing.Usage
	out.CacheRead = min(cached, prompt)
	out.CacheCreation = min(created, prompt-out.CacheRead)
	out.CacheCreation1h = min(usagejson.OneHour(det[3], top[5]), out.CacheCreation)
	out.Input = prompt - out.CacheRead - out.CacheCreation
	out.Output = completion
	var cd [len(openAICompletionDetailKeys)]gjson.Result
	usagejson.Members(complDetails, openAICompletionDetailKeys[:], cd[:])
	out.Reasoning = min(usagejson.Count(cd[0]), out.Output)
	out.AudioInput = min(usagejson.Count(det[4]), out.Input)
	out.AudioOutput = min(usagejson.Count(cd[1]), out.Output)
	return out, nil
}

// The members of an OpenAI usage object and of its prompt_tokens_details
// that NormalizeUsage reads, each object in one pass (see usagejson.Members).
var (
	openAIUsageKeys  = [...]string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details", "cache_creation_input_tokens", "cache_creation"}
	openAIDetailKeys = [...]string{"cached_tokens", "cache_write_tokens", "cache_creation_input_tokens", "cache_creation", "audio_tokens"}
	// openAICompletionDetailKeys are those of completion_tokens_details.
	openAICompletionDetailKeys = [...]string{"reasoning_tokens", "audio_tokens"}
)

// NormalizeImagesUsage converts the raw JSON of an OpenAI Images answer's
// "usage" object (gpt-image-1 and later) into buckets: input_tokens is
// Input, of which input_tokens_details.image_tokens is ImageInput;
// output_tokens is Output, of which output_tokens_details.image_tokens is
// ImageOutput, or all of it when the answer has no such breakdown (the
// first image models generate only image tokens). Missing fields count as
// zero, negative counts as zero, and the parts are capped at their whole.
func NormalizeImagesUsage(usage []byte) (billing.Usage, error) {
	u, err := usagejson.ParseObject(usage)
	if err != nil {
		return billing.Usage{}, err
	}
	var top [len(imagesUsageKeys)]gjson.Result
	usagejson.Members(u, imagesUsageKeys[:], top[:])
	var out billing.Usage
	out.Input, out.Output = usagejson.Count(top[0]), usagejson.Count(top[1])
	out.ImageInput = min(usagejson.Count(top[2].Get("image_tokens")), out.Input)
	out.ImageOutput = out.Output
	if img := top[3].Get("image_tokens"); img.Exists() {
		out.ImageOutput = min(usagejson.Count(img), out.Output)
	}
	return out, nil
}

// The members of an Images usage object that NormalizeImagesUsage reads.
var imagesUsageKeys = [...]string{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
