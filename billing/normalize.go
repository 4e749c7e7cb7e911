package billing

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/jsonlimit"
)

// errNotObject is returned for a usage payload that is not a JSON object.
var errNotObject = errors.New("usage is not a json object")

// NormalizeOpenAI converts the raw JSON of an OpenAI chat completions
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
func NormalizeOpenAI(usage []byte) (Usage, error) {
	u, err := parseObject(usage)
	if err != nil {
		return Usage{}, err
	}
	var top [len(openAIUsageKeys)]gjson.Result
	members(u, openAIUsageKeys[:], top[:])
	prompt, completion, details, complDetails := count(top[0]), count(top[1]), top[2], top[3]
	var det [len(openAIDetailKeys)]gjson.Result
	members(details, openAIDetailKeys[:], det[:])
	cached := count(det[0])
	created, ok := firstPresent(det[1], det[2], det[3].Get("cache_creation_input_tokens"))
	if !ok {
		created, ok = ephemeral(det[3])
	}
	if !ok {
		created, ok = firstPresent(top[4])
	}
	if !ok {
		created, _ = ephemeral(top[5])
	}

	var out Usage
	out.CacheRead = min(cached, prompt)
	out.CacheCreation = min(created, prompt-out.CacheRead)
	out.CacheCreation1h = min(oneHour(det[3], top[5]), out.CacheCreation)
	out.Input = prompt - out.CacheRead - out.CacheCreation
	out.Output = completion
	var cd [len(openAICompletionDetailKeys)]gjson.Result
	members(complDetails, openAICompletionDetailKeys[:], cd[:])
	out.Reasoning = min(count(cd[0]), out.Output)
	out.AudioInput = min(count(det[4]), out.Input)
	out.AudioOutput = min(count(cd[1]), out.Output)
	return out, nil
}

// The members of an OpenAI usage object and of its prompt_tokens_details
// that NormalizeOpenAI reads, each object in one pass (see members).
var (
	openAIUsageKeys  = [...]string{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details", "cache_creation_input_tokens", "cache_creation"}
	openAIDetailKeys = [...]string{"cached_tokens", "cache_write_tokens", "cache_creation_input_tokens", "cache_creation", "audio_tokens"}
	// openAICompletionDetailKeys are those of completion_tokens_details.
	openAICompletionDetailKeys = [...]string{"reasoning_tokens", "audio_tokens"}
)

// members sets out[i] to the first member of obj named keys[i], in one
// pass over obj; a gjson Get per key would read obj once per key. out is
// left as it is for a key obj lacks, or when obj is not an object.
func members(obj gjson.Result, keys []string, out []gjson.Result) {
	if !obj.IsObject() {
		return
	}
	obj.ForEach(func(k, v gjson.Result) bool {
		for i, key := range keys {
			if k.Str == key && !out[i].Exists() {
				out[i] = v
				break
			}
		}
		return true
	})
}

// NormalizeDashScope is NormalizeOpenAI: DashScope's compatible mode speaks
// the OpenAI protocol, and its cache fields are handled there.
func NormalizeDashScope(usage []byte) (Usage, error) { return NormalizeOpenAI(usage) }

// NormalizeAnthropic converts the raw JSON of an Anthropic Messages "usage"
// object into disjoint buckets. In this protocol the buckets are already
// disjoint: input_tokens excludes cache_creation_input_tokens and
// cache_read_input_tokens. cache_creation{ephemeral_5m_input_tokens,
// ephemeral_1h_input_tokens} is a breakdown of cache_creation_input_tokens
// and gives the total only when that is absent; its 1-hour part is
// CacheCreation1h, capped at the total.
// output_tokens_details.thinking_tokens is the part of output_tokens spent
// on reasoning, Reasoning (capped at Output); absent, Reasoning stays zero.
// server_tool_use.web_search_requests and web_fetch_requests are the server
// tools' calls, WebSearches and WebFetches; code_execution_requests, the
// calls of code execution, which run in the message's one container, make
// one code session (CodeSessions 1: Anthropic bills the container's time,
// which the usage does not report). Missing fields count as zero and
// negative counts are clamped to zero.
func NormalizeAnthropic(usage []byte) (Usage, error) {
	u, err := parseObject(usage)
	if err != nil {
		return Usage{}, err
	}
	var out Usage
	out.Input = count(u.Get("input_tokens"))
	out.CacheRead = count(u.Get("cache_read_input_tokens"))
	var ok bool
	if out.CacheCreation, ok = firstCount(u, "cache_creation_input_tokens"); !ok {
		out.CacheCreation, _ = ephemeral(u.Get("cache_creation"))
	}
	out.CacheCreation1h = min(oneHour(u.Get("cache_creation")), out.CacheCreation)
	out.Output = count(u.Get("output_tokens"))
	out.Reasoning = min(count(u.Get("output_tokens_details.thinking_tokens")), out.Output)
	out.WebSearches, out.WebFetches, out.CodeSessions = serverToolUse(u.Get("server_tool_use"))
	return out, nil
}

// serverToolUse reads an Anthropic server_tool_use object's counts of web
// searches and fetches, and whether code execution ran (one session).
func serverToolUse(st gjson.Result) (searches, fetches, sessions int64) {
	if !st.IsObject() {
		return 0, 0, 0
	}
	var m [3]gjson.Result
	members(st, []string{"web_search_requests", "web_fetch_requests", "code_execution_requests"}, m[:])
	return count(m[0]), count(m[1]), min(count(m[2]), 1)
}

// parseObject checks that b is a JSON object, nested no deeper than
// jsonlimit.DefaultMaxDepth, and parses it without copying: the result
// aliases b and must not outlive it. The usage comes from upstreams, and a
// recursive validator would overflow the stack on a deep one.
func parseObject(b []byte) (gjson.Result, error) {
	if err := jsonlimit.Check(b, jsonlimit.DefaultMaxDepth); err != nil {
		return gjson.Result{}, fmt.Errorf("usage: %w", err)
	}
	s := unsafe.String(unsafe.SliceData(b), len(b))
	r := gjson.Parse(s)
	if !r.IsObject() {
		return gjson.Result{}, errNotObject
	}
	return r, nil
}

// count reads a token count: a number (or a numeric string), zero when
// missing, null or negative, and at most MaxTokenCount.
func count(r gjson.Result) int64 {
	if r.Type != gjson.Number && r.Type != gjson.String {
		return 0
	}
	return min(max(r.Int(), 0), MaxTokenCount)
}

// firstCount returns the count of the first of paths present in obj.
func firstCount(obj gjson.Result, paths ...string) (int64, bool) {
	for _, p := range paths {
		if n, ok := firstPresent(obj.Get(p)); ok {
			return n, true
		}
	}
	return 0, false
}

// firstPresent returns the count of the first of rs that is present and
// not null.
func firstPresent(rs ...gjson.Result) (int64, bool) {
	for _, r := range rs {
		if r.Exists() && r.Type != gjson.Null {
			return count(r), true
		}
	}
	return 0, false
}

// ephemeral sums a cache_creation breakdown object; ok is false when neither
// of its fields is present.
func ephemeral(cc gjson.Result) (int64, bool) {
	if !cc.IsObject() {
		return 0, false
	}
	m5, ok5 := firstCount(cc, "ephemeral_5m_input_tokens")
	h1, ok1 := firstCount(cc, "ephemeral_1h_input_tokens")
	return m5 + h1, ok5 || ok1
}

// oneHour returns the ephemeral_1h_input_tokens of the first of the
// cache_creation breakdowns ccs that has them, or zero.
func oneHour(ccs ...gjson.Result) int64 {
	for _, cc := range ccs {
		if cc.IsObject() {
			if n, ok := firstCount(cc, "ephemeral_1h_input_tokens"); ok {
				return n
			}
		}
	}
	return 0
}
