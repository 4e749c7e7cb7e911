package chatproxy

import (
	"bufio"
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/authn"
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/providers"
	"github.com/tidwall/gjson"
)

// fakeUpstream is a test provider that records what it receives.
type fakeUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	hits    int
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func newUpstream(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.hits++
		u.bodies = append(u.bodies, body)
		u.headers = append(u.headers, r.Header.Clone())
		u.paths = append(u.paths, r.URL.Path)
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fakeUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hits
}

// answer returns a handler writing status, content type and body.
func answer(status int, ct, body string, extra ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(extra); i += 2 {
			w.Header().Set(extra[i], extra[i+1])
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// sseAnswer streams events one by one, flushing each.
func sseAnswer(events []string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range events {
			_, _ = io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

func provider(proto string, timeout time.Duration, urls ...string) *providers.Provider {
	keys := make([]string, len(urls))
	for i := range urls {
		keys[i] = "sk-up-" + string(rune('a'+i))
	}
	return &providers.Provider{Name: "prov", Protocol: proto, BaseURLs: urls, APIKeys: keys, Timeout: timeout, Retries: len(urls) - 1}
}

// serveAll serves c as a handler does: Serve, then the held end of the
// response released (there is no ledger to wait for here).
func serveAll(p *Proxy, w http.ResponseWriter, r *http.Request, c *Call) Result {
	res := p.Serve(w, r, c)
	if res.Held != nil {
		res.BytesOut += res.Held.Release(w)
	}
	res.Close()
	return res
}

// clientRequest is the request as the client sent it to the gateway.
func clientRequest(ctx context.Context, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer sk-air-client")
	r.Header.Set("X-Api-Key", "sk-air-client")
	return r
}

// chatCall inspects and prepares body like the handler does.
func chatCall(t *testing.T, proto dialect.Wire, prov *providers.Provider, body, upstreamModel string) *Call {
	if proto == nil {
		proto = openai.Wire // the zero case: chat completions
	}
	t.Helper()
	inspect, path := openai.InspectChat, "/chat/completions"
	if proto == anthropic.Wire {
		inspect, path = anthropic.InspectMessages, "/messages"
	}
	in, e := inspect([]byte(body), 0)
	if e != nil {
		t.Fatal(e.Message)
	}
	out, inj, err := dialect.PrepareBody(proto, []byte(body), in, upstreamModel)
	if err != nil {
		t.Fatal(err)
	}
	return &Call{Wire: proto, Provider: prov, Path: path, Body: out, Inspected: in, StripUsage: inj, ClientHeader: http.Header{}, RequestID: "req-1"}
}

// extBody is a client body full of extension fields, odd whitespace and
// escapes, that must reach the upstream byte for byte.
const extBody = "{ \"model\" :\t\"qwen3-max\",\n  \"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"caf\\u00e9 \\ud83d\\ude00 \\\"quoted\\\"\",\"cache_control\":{\"type\":\"ephemeral\"}}]}],\r\n" +
	"\"enable_thinking\":true, \"thinking_budget\":  4096,\"enable_search\":true,\"search_options\":{\"forced_search\":true,\"search_strategy\":\"pro\"},\n" +
	"\"seed\":12345678901234567890,\"top_k\":20,\"logprobs\":true,\"top_logprobs\":3,\"enable_context_caching\":true,\"temperature\":0.70,\n" +
	"\"vendor\":{\"nested\":{\"deep\":[1,2.50,-0e0,{\"k\":null}],\"s\":\"\\/path\"}}  %s}\n\t"

const chatJSON = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen-plus","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!","reasoning_content":"The user greets."},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":20}},"system_fingerprint":null}`

func TestServeJSON(t *testing.T) {
	up := newUpstream(t, answer(200, "application/json", chatJSON,
		"X-Request-Id", "up-1", "Openai-Processing-Ms", "12", "X-Ratelimit-Remaining-Requests", "99", "X-Internal-Secret", "s"))
	body := strings.Replace(extBody, "%s", "", 1)
	c := chatCall(t, openai.Wire, provider("openai", 0, up.URL+"/v1"), body, "")
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), c)

	if string(up.bodies[0]) != body {
		t.Errorf("upstream body differs from the client's:\n%s", up.bodies[0])
	}
	h := up.headers[0]
	if up.paths[0] != "/v1/chat/completions" || h.Get("Authorization") != "Bearer sk-up-a" || h.Get("X-Api-Key") != "" ||
		h.Get("Content-Type") != "application/json" || h.Get("Accept-Encoding") != "identity" {
		t.Errorf("upstream request: path %s, headers %v", up.paths[0], h)
	}
	if rec.Code != 200 || rec.Body.String() != chatJSON {
		t.Errorf("client got %d %q", rec.Code, rec.Body.String())
	}
	for k, want := range map[string]string{
		"X-Upstream-Request-Id": "up-1", "X-Request-Id": "", "Openai-Processing-Ms": "12", "X-Ratelimit-Remaining-Requests": "99",
		"X-Internal-Secret": "", "Content-Length": strconv.Itoa(len(chatJSON)), "Content-Type": "application/json",
	} {
		if got := rec.Header().Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	want := billing.Usage{Input: 20, CacheRead: 100, Output: 30, Reasoning: 20}
	if !res.Reached || res.Status != 200 || res.Usage != want || res.Source != billing.SourceReported || res.Outcome != OutcomeOK ||
		res.Attempts != 1 || res.Provider != "prov" || res.BytesOut != int64(len(chatJSON)) || res.Err != nil {
		t.Errorf("result %+v", res)
	}
}

func TestServeJSONWithoutUsageIsEstimated(t *testing.T) {
	resp := `{"choices":[{"message":{"content":"` + strings.Repeat("a", 40) + `"}}]}`
	up := newUpstream(t, answer(200, "application/json", resp))
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("b", 84) + `"}]}`
	c := chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "")
	res := serveAll(&Proxy{}, httptest.NewRecorder(), clientRequest(context.Background(), body), c)
	// (84 + 16) / 4 = 25 prompt tokens, 40 / 4 = 10 output tokens.
	if want := (billing.Usage{Input: 25, Output: 10}); res.Usage != want || res.Source != billing.SourceEstimated {
		t.Errorf("got %+v %s, want %+v estimated", res.Usage, res.Source, want)
	}
}

func TestServeLargeJSONUsageInTail(t *testing.T) {
	resp := `{"choices":[{"message":{"content":"` + strings.Repeat("z", 3*maxHeld) + `"}}],"usage":{"prompt_tokens":9,"completion_tokens":700000}}`
	up := newUpstream(t, answer(200, "application/json", resp))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
	if rec.Body.String() != resp {
		t.Errorf("body changed (%d bytes, want %d)", rec.Body.Len(), len(resp))
	}
	if want := (billing.Usage{Input: 9, Output: 700000}); res.Usage != want || res.Source != billing.SourceReported {
		t.Errorf("got %+v %s", res.Usage, res.Source)
	}
}

// chunk builds an OpenAI stream chunk; usage is appended when not empty.
func chunk(choices, usage string) string {
	s := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":` + choices
	if usage != "" {
		s += `,"usage":` + usage
	}
	return "data: " + s + "}\n\n"
}

func TestServeStreamReasoningPassThrough(t *testing.T) {
	events := []string{
		chunk(`[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":""},"finish_reason":null}]`, "null"),
		chunk(`[{"index":0,"delta":{"reasoning_content":"Let me think \u2014 "},"finish_reason":null}]`, "null"),
		chunk(`[{"index":0,"delta":{"content":"Answer"},"finish_reason":null}]`, "null"),
		chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`, "null"),
		chunk(`[]`, `{"prompt_tokens":10,"completion_tokens":8,"total_tokens":18,"completion_tokens_details":{"reasoning_tokens":5}}`),
		"data: [DONE]\n\n",
	}
	up := newUpstream(t, sseAnswer(events))
	body := `{"model":"qwen3","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"enable_thinking":true}`
	c := chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "qwen3-upstream")
	if c.StripUsage {
		t.Fatal("client asked for usage: nothing to strip")
	}
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), c)
	if got := string(up.bodies[0]); got != strings.Replace(body, `"qwen3"`, `"qwen3-upstream"`, 1) {
		t.Errorf("upstream body %s", got)
	}
	if rec.Body.String() != strings.Join(events, "") {
		t.Errorf("client stream differs:\n%s", rec.Body.String())
	}
	if rec.Header().Get("Content-Type") != "text/event-stream" || !rec.Flushed {
		t.Errorf("content type %q flushed %v", rec.Header().Get("Content-Type"), rec.Flushed)
	}
	if want := (billing.Usage{Input: 10, Output: 8, Reasoning: 5}); res.Usage != want || res.Source != billing.SourceReported || res.Outcome != OutcomeOK {
		t.Errorf("result %+v", res)
	}
}

func TestServeStreamStripsInjectedUsage(t *testing.T) {
	choices := []string{
		`[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}]`,
		`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}]`,
		`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`,
	}
	usage := `{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62,"prompt_tokens_details":{"cached_tokens":32}}`
	var upstreamEvents, clientWants []string
	for _, ch := range choices {
		upstreamEvents = append(upstreamEvents, chunk(ch, "null"))
		clientWants = append(clientWants, chunk(ch, ""))
	}
	upstreamEvents = append(upstreamEvents, chunk(`[]`, usage), "data: [DONE]\n\n")
	clientWants = append(clientWants, "data: [DONE]\n\n")

	up := newUpstream(t, sseAnswer(upstreamEvents))
	body := `{"model":"m","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"stream":true}`
	c := chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "")
	if !c.StripUsage {
		t.Fatal("usage was not injected")
	}
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), c)
	if got := gjson.GetBytes(up.bodies[0], "stream_options.include_usage"); got.Type != gjson.True {
		t.Errorf("upstream did not get include_usage: %s", up.bodies[0])
	}
	if got, want := rec.Body.String(), strings.Join(clientWants, ""); got != want {
		t.Errorf("client stream:\n%s\nwant:\n%s", got, want)
	}
	if want := (billing.Usage{Input: 18, CacheRead: 32, Output: 12}); res.Usage != want || res.Source != billing.SourceReported {
		t.Errorf("result %+v", res)
	}
	if res.BytesOut != int64(rec.Body.Len()) {
		t.Errorf("BytesOut %d, client got %d", res.BytesOut, rec.Body.Len())
	}
}

func TestServeStreamUsageInLastContentChunk(t *testing.T) {
	// Some upstreams put the usage on the finish chunk: the chunk is kept,
	// only the usage member goes.
	up := newUpstream(t, sseAnswer([]string{
		chunk(`[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]`, `{"prompt_tokens":3,"completion_tokens":1}`),
		"data: [DONE]\n\n",
	}))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
	if want := chunk(`[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]`, "") + "data: [DONE]\n\n"; rec.Body.String() != want {
		t.Errorf("client stream %q", rec.Body.String())
	}
	if res.Usage != (billing.Usage{Input: 3, Output: 1}) {
		t.Errorf("usage %+v", res.Usage)
	}
}

func TestServeStreamWithoutUsageIsEstimated(t *testing.T) {
	up := newUpstream(t, sseAnswer([]string{
		chunk(`[{"index":0,"delta":{"content":"12345678"},"finish_reason":null}]`, ""),
		"data: [DONE]\n\n",
	}))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	res := serveAll(&Proxy{}, httptest.NewRecorder(), clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, ""))
	if want := (billing.Usage{Input: 5, Output: 2}); res.Usage != want || res.Source != billing.SourceEstimated || res.Outcome != OutcomeOK {
		t.Errorf("result %+v", res)
	}
}

const anthropicJSON = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Hi!"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":21,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":0},"output_tokens":50,"service_tier":"standard"}}`

func TestServeAnthropicJSON(t *testing.T) {
	up := newUpstream(t, answer(200, "application/json", anthropicJSON, "Request-Id", "req_up", "Anthropic-Ratelimit-Tokens-Remaining", "5"))
	body := `{"model":"claude","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`
	c := chatCall(t, anthropic.Wire, provider("anthropic", 0, up.URL+"/v1"), body, "claude-sonnet-4-5")
	c.ClientHeader.Set("Anthropic-Beta", "prompt-caching-2024-07-31")
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), c)
	h := up.headers[0]
	if up.paths[0] != "/v1/messages" || h.Get("X-Api-Key") != "sk-up-a" || h.Get("Authorization") != "" ||
		h.Get("Anthropic-Version") != authn.DefaultAnthropicVersion || h.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" {
		t.Errorf("upstream request %s %v", up.paths[0], h)
	}
	if string(up.bodies[0]) != strings.Replace(body, `"claude"`, `"claude-sonnet-4-5"`, 1) {
		t.Errorf("upstream body %s", up.bodies[0])
	}
	if rec.Body.String() != anthropicJSON || rec.Header().Get("Upstream-Request-Id") != "req_up" || rec.Header().Get("Anthropic-Ratelimit-Tokens-Remaining") != "5" {
		t.Errorf("client got %v %s", rec.Header(), rec.Body.String())
	}
	if want := (billing.Usage{Input: 21, CacheCreation: 1000, CacheRead: 2000, Output: 50}); res.Usage != want || res.Source != billing.SourceReported {
		t.Errorf("result %+v", res)
	}
}

func anthropicEvent(name, data string) string { return "event: " + name + "\ndata: " + data + "\n\n" }

func TestServeAnthropicStream(t *testing.T) {
	events := []string{
		anthropicEvent("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude","stop_reason":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":3000,"output_tokens":2}}}`),
		anthropicEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`),
		anthropicEvent("ping", `{"type": "ping"}`),
		anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"step"}}`),
		anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`),
		anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":0}`),
		anthropicEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"calc","input":{}}}`),
		anthropicEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"x\": 1}"}}`),
		anthropicEvent("content_block_stop", `{"type":"content_block_stop","index":1}`),
		anthropicEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`),
		anthropicEvent("message_stop", `{"type":"message_stop"}`),
	}
	up := newUpstream(t, sseAnswer(events))
	body := `{"model":"claude","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"2+2"}]}`
	c := chatCall(t, anthropic.Wire, provider("anthropic", 0, up.URL), body, "")
	c.ClientHeader.Set("Anthropic-Version", "2026-10-21")
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), c)
	if string(up.bodies[0]) != body || up.headers[0].Get("Anthropic-Version") != "2026-10-21" {
		t.Errorf("upstream got %s %v", up.bodies[0], up.headers[0])
	}
	if rec.Body.String() != strings.Join(events, "") {
		t.Errorf("client stream differs:\n%s", rec.Body.String())
	}
	if want := (billing.Usage{Input: 472, CacheRead: 3000, Output: 89}); res.Usage != want || res.Source != billing.SourceReported || res.Outcome != OutcomeOK {
		t.Errorf("result %+v", res)
	}
}

func TestServeUpstreamErrorPassThrough(t *testing.T) {
	errBody := `{"error":{"message":"Range of input length should be [1, 30720]","type":"invalid_request_error","param":null,"code":"invalid_parameter_error"}}`
	up := newUpstream(t, answer(400, "application/json", errBody, "X-Request-Id", "r9"))
	other := newUpstream(t, answer(200, "application/json", chatJSON))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, up.URL, other.URL), body, ""))
	if rec.Code != 400 || rec.Body.String() != errBody || rec.Header().Get("X-Upstream-Request-Id") != "r9" {
		t.Errorf("client got %d %s", rec.Code, rec.Body.String())
	}
	if up.count() != 1 || other.count() != 0 {
		t.Errorf("hits %d %d: a 400 must not be retried", up.count(), other.count())
	}
	if !res.Reached || res.Status != 400 || res.Outcome != OutcomeUpstreamError || res.Usage != (billing.Usage{}) || res.Attempts != 1 {
		t.Errorf("result %+v", res)
	}
}

// closedURL is the address of a server that no longer listens.
func closedURL() string {
	s := httptest.NewServer(http.NotFoundHandler())
	s.Close()
	return s.URL
}

func TestServeRetries(t *testing.T) {
	fail500 := newUpstream(t, answer(500, "application/json", `{"error":{"message":"boom"}}`))
	fail429 := newUpstream(t, answer(429, "application/json", `{"error":{"message":"slow down"}}`, "Retry-After", "7"))
	ok := newUpstream(t, answer(200, "application/json", chatJSON))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`

	for i, tc := range []struct {
		urls       []string
		status     int
		body       string
		outcome    string
		attempts   int
		retryAfter string
		reached    bool
	}{
		{urls: []string{closedURL(), fail500.URL, fail429.URL, ok.URL}, status: 200, body: chatJSON, outcome: OutcomeOK, attempts: 4, reached: true},
		// When every attempt fails, the last answer, a 429 or 5xx, is passed
		// through with its Retry-After; with none (the last attempt could
		// not connect), the client gets 503 upstream_unavailable with
		// Retry-After: a cooldown's end, or a second.
		{urls: []string{fail429.URL, fail500.URL}, status: 500, body: `{"error":{"message":"boom","type":"server_error","param":null,"code":null}}`, outcome: OutcomeUpstreamError, attempts: 2, reached: true},
		{urls: []string{fail500.URL, fail429.URL}, status: 429, body: `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`, outcome: OutcomeUpstreamError, attempts: 2, retryAfter: "7", reached: true},
		{urls: []string{fail500.URL, closedURL()}, status: 503, body: unavailableJSON, outcome: OutcomeUnavailable, attempts: 2, retryAfter: "1"},
		{urls: []string{closedURL(), closedURL()}, status: 503, body: unavailableJSON, outcome: OutcomeUnavailable, attempts: 2, retryAfter: "1"},
	} {
		rec := httptest.NewRecorder()
		res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, tc.urls...), body, ""))
		if rec.Code != tc.status || res.Status != tc.status || res.Outcome != tc.outcome || res.Attempts != tc.attempts {
			t.Errorf("Test %d: client %d, result %+v", i, rec.Code, res)
		}
		if tc.body != "" && rec.Body.String() != tc.body {
			t.Errorf("Test %d: body %s", i, rec.Body.String())
		}
		if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("Test %d: Retry-After %q, want %q", i, got, tc.retryAfter)
		}
		if res.Reached != tc.reached {
			t.Errorf("Test %d: reached=%v", i, res.Reached)
		}
	}
	if fail500.count() != 4 || fail429.count() != 3 || ok.count() != 1 {
		t.Errorf("hits: 500=%d 429=%d ok=%d, want 4 3 1", fail500.count(), fail429.count(), ok.count())
	}

	// The Anthropic endpoint answers in its own error shape.
	rec := httptest.NewRecorder()
	mbody := `{"model":"c","messages":[{"role":"user","content":"x"}]}`
	serveAll(&Proxy{}, rec, clientRequest(context.Background(), mbody), chatCall(t, anthropic.Wire, provider("anthropic", 0, closedURL()), mbody, ""))
	if rec.Code != 503 || gjson.Get(rec.Body.String(), "type").Str != "error" || gjson.Get(rec.Body.String(), "error.type").Str != "overloaded_error" ||
		rec.Header().Get("Retry-After") == "" {
		t.Errorf("anthropic 503: %d %s", rec.Code, rec.Body.String())
	}
}

func TestServeNoRetryAfterFirstByte(t *testing.T) {
	broken := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"partial"}}]`, ""))
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close() // the stream breaks after the first event
		}
	})
	spare := newUpstream(t, answer(200, "text/event-stream", "data: [DONE]\n\n"))
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 0, broken.URL, spare.URL), body, ""))
	if broken.count() != 1 || spare.count() != 0 {
		t.Errorf("hits %d %d: retried after the first byte", broken.count(), spare.count())
	}
	if !strings.Contains(rec.Body.String(), "partial") || res.Outcome != OutcomeUpstreamError || res.Source != billing.SourcePartial || res.Attempts != 1 || !res.Reached {
		t.Errorf("client %q result %+v", rec.Body.String(), res)
	}
}

func TestServeTimeout(t *testing.T) {
	released := make(chan struct{})
	hung := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
		close(released)
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	rec := httptest.NewRecorder()
	done := make(chan Result)
	go func() {
		done <- serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 20*time.Millisecond, hung.URL), body, ""))
	}()
	res := <-done // Serve returns: the goroutine is not held
	<-released    // and the upstream request was cancelled
	if rec.Code != 504 || gjson.Get(rec.Body.String(), "error.code").Str != "upstream_timeout" {
		t.Errorf("client got %d %s", rec.Code, rec.Body.String())
	}
	if res.Reached || res.Outcome != OutcomeTimeout || res.Attempts != 1 {
		t.Errorf("result %+v", res)
	}
}

func TestServeStreamIdleTimeout(t *testing.T) {
	silent := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"first"}}]`, ""))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then falls silent
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(context.Background(), body), chatCall(t, openai.Wire, provider("openai", 50*time.Millisecond, silent.URL), body, ""))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "first") {
		t.Errorf("client got %d %s", rec.Code, rec.Body.String())
	}
	if !res.Reached || res.Outcome != OutcomeTimeout || res.Source != billing.SourcePartial {
		t.Errorf("result %+v", res)
	}
}

// gateway is a client-facing server running Serve and reporting every
// Result it returns.
func gateway(t *testing.T, call func() *Call) (string, chan Result) {
	t.Helper()
	results := make(chan Result, 4)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		results <- serveAll(&Proxy{}, w, r, call())
	}))
	t.Cleanup(s.Close)
	return s.URL, results
}

// postStream sends a streaming chat request through a gateway to up and
// returns the response and the channel of the gateway's result.
func postStream(t *testing.T, up *fakeUpstream) (*http.Response, chan Result) {
	t.Helper()
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	url, results := gateway(t, func() *Call { return chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "") })
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return resp, results
}

func TestServeFlushesEachEvent(t *testing.T) {
	const n = 5
	next := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for k := 0; k < n; k++ {
			_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"e`+strconv.Itoa(k)+`"}}]`, "null"))
			w.(http.Flusher).Flush()
			select {
			case <-next: // the client has event k: send k+1
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Second):
				t.Errorf("event %d never reached the client", k)
				return
			}
		}
		_, _ = io.WriteString(w, chunk(`[]`, `{"prompt_tokens":1,"completion_tokens":5}`)+"data: [DONE]\n\n")
	})
	resp, results := postStream(t, up)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for k := 0; k < n; k++ {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if want := `"content":"e` + strconv.Itoa(k) + `"`; !strings.Contains(line, want) || strings.Contains(line, "usage") {
			t.Fatalf("event %d: %q", k, line)
		}
		_, _ = br.ReadString('\n') // blank line
		next <- struct{}{}
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "data: [DONE]\n\n" {
		t.Errorf("rest of stream %q", rest)
	}
	if res := <-results; res.Usage != (billing.Usage{Input: 1, Output: 5}) || res.Outcome != OutcomeOK {
		t.Errorf("result %+v", res)
	}
}

// TestServeStreamHeadersBeforeSlowFirstEvent checks that a client gets the
// response headers while the upstream has not sent an event yet, as from a
// model that thinks before it answers.
func TestServeStreamHeadersBeforeSlowFirstEvent(t *testing.T) {
	gotHeaders := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-gotHeaders:
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Second):
			t.Error("the client never got the headers")
		}
		_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"late"}}]`, `{"prompt_tokens":1,"completion_tokens":1}`)+"data: [DONE]\n\n")
	})
	resp, results := postStream(t, up)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("headers: %d %v", resp.StatusCode, resp.Header)
	}
	close(gotHeaders)
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), `"late"`) {
		t.Errorf("body %q", b)
	}
	<-results
}

// flushCounter is a discardWriter that counts flushes and notes whether
// any came before the first write.
type flushCounter struct {
	discardWriter
	flushes    int
	emptyFlush bool
}

func (f *flushCounter) Flush() {
	f.flushes++
	f.emptyFlush = f.emptyFlush || f.n == 0
}

// TestServeStreamHeadersLeaveWithFirstEvent checks that when the upstream's
// events are there at once, the headers are not flushed alone: the events
// leave in one flush, as from reverse_proxy, and the held final event in a
// second once the record is durable.
func TestServeStreamHeadersLeaveWithFirstEvent(t *testing.T) {
	stream := chunk(`[{"index":0,"delta":{"content":"a"}}]`, "") + chunk(`[{"index":0,"delta":{"content":"b"}}]`, "") +
		chunk(`[]`, `{"prompt_tokens":1,"completion_tokens":2}`) + "data: [DONE]\n\n"
	tr := &memTransport{status: 200, header: http.Header{"Content-Type": {"text/event-stream"}}, body: []byte(stream)}
	body := `{"model":"m","messages":[{"role":"user","content":"x"}],"stream":true}`
	call := chatCall(t, openai.Wire, provider("openai", 0, "http://up/v1"), body, "")
	r, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://gw/v1/chat/completions", nil)
	w := &flushCounter{discardWriter: discardWriter{h: make(http.Header)}}
	res := serveAll(&Proxy{Transport: tr}, w, r, call)
	if res.Outcome != OutcomeOK || w.n == 0 {
		t.Fatalf("result %+v, %d bytes", res, w.n)
	}
	if w.flushes != 2 || w.emptyFlush {
		t.Errorf("%d flushes (one before the first write: %v), want one after the events and one after [DONE]", w.flushes, w.emptyFlush)
	}
}

func TestServeClientDisconnect(t *testing.T) {
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, chunk(`[{"index":0,"delta":{"content":"`+strings.Repeat("w", 40)+`"}}]`, "null"))
		w.(http.Flusher).Flush()
		<-r.Context().Done() // holds the stream open until the gateway cancels it
		close(cancelled)
	})
	body := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("p", 384) + `"}],"stream":true}`
	url, results := gateway(t, func() *Call { return chatCall(t, openai.Wire, provider("openai", 0, up.URL), body, "") })
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(resp.Body).ReadString('\n')
	if !strings.Contains(line, "wwww") {
		t.Fatalf("first event %q", line)
	}
	cancel() // the client goes away mid-stream
	resp.Body.Close()
	<-cancelled // the upstream request is cancelled at once
	res := <-results
	if !res.Reached || res.Outcome != OutcomePartial || res.Source != billing.SourcePartial {
		t.Errorf("result %+v", res)
	}
	// (384 + 16) / 4 = 100 prompt tokens; 40 delivered bytes = 10 tokens.
	if want := (billing.Usage{Input: 100, Output: 10}); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	select {
	case extra := <-results:
		t.Errorf("a second result: %+v", extra)
	default:
	}
}

func TestServeClientGoneBeforeAnswer(t *testing.T) {
	started := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	body := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, clientRequest(ctx, body), chatCall(t, openai.Wire, provider("openai", 0, up.URL, up.URL), body, ""))
	if res.Reached || res.Outcome != OutcomeCanceled || res.Attempts != 1 {
		t.Errorf("result %+v", res)
	}
}

func TestIsEventStream(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"text/event-stream", true},
		{"text/event-stream; charset=utf-8", true},
		{" Text/Event-Stream ;charset=utf-8", true},
		{"text/event-stream;", true},
		{"application/json", false},
		{"text/event-streams", false},
		{"text/plain; x=text/event-stream", false},
		{"", false},
	} {
		if got := isEventStream(tc.ct); got != tc.want {
			t.Errorf("isEventStream(%q) = %v, want %v", tc.ct, got, tc.want)
		}
	}
}
