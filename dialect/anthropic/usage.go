package anthropic

import (
	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/dialect/internal/usagejson"
)

// NormalizeUsage converts the raw JSON of an Anthropic Messages "usage"
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
func NormalizeUsage(usage []byte) (billing.Usage, error) {
	u, err := usagejson.ParseObject(usage)
	if err != nil {
		return billing.Usage{}, err
	}
	var out billing.Usage
	out.Input = usagejson.Count(u.Get("input_tokens"))
	out.CacheRead = usagejson.Count(u.Get("cache_read_input_tokens"))
	var ok bool
	if out.CacheCreation, ok = usagejson.FirstCount(u, "cache_creation_input_tokens"); !ok {
		out.CacheCreation, _ = usagejson.Ephemeral(u.Get("cache_creation"))
	}
	out.CacheCreation1h = min(usagejson.OneHour(u.Get("cache_creation")), out.CacheCreation)
	out.Output = usagejson.Count(u.Get("output_tokens"))
	out.Reasoning = min(usagejson.Count(u.Get("output_tokens_details.thinking_tokens")), out.Output)
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
	usagejson.Members(st, []string{"web_search_requests", "web_fetch_requests", "code_execution_requests"}, m[:])
	return usagejson.Count(m[0]), usagejson.Count(m[1]), min(usagejson.Count(m[2]), 1)
}
