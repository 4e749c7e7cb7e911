package integration

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// extensionBody is a request full of fields the gateway does not know,
// odd whitespace and escapes included: it must reach the upstream as is.
const extensionBody = `{"model":"rec-model",  "messages":[{"role":"user","content":"h\u00e9llo \"q\" \n"}],
 "enable_thinking":true,"thinking_budget":512,"enable_search":true,"search_options":{"forced_search":true,"search_strategy":"pro"},
 "seed":42,"top_k":20,"logprobs":true,"enable_context_caching":true,"vendor_x":{"deep":[1,2.50,{"a":null}]},"temperature":0.7}`

const recJSONResponse = `{"id":"chatcmpl-rec1","object":"chat.completion","created":1700000000,"model":"rec-model","choices":[{"index":0,"message":{"role":"assistant","content":"hi","reasoning_content":"thought","annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":10}},"system_fingerprint":"fp_x","service_tier":"default"}`

// reasoningStream is an upstream SSE answer with reasoning_content, as sent
// when include_usage is on (usage:null in every chunk, a usage chunk last).
var reasoningStream = []string{
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}],\"usage\":null}\n\n",
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"Let me think\"},\"finish_reason\":null}],\"usage\":null}\n\n",
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Answer\"},\"finish_reason\":null}],\"usage\":null,\"obfuscation\":\"xyz\"}\n\n",
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n",
	"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":20,\"total_tokens\":70,\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":5}}}\n\n",
	"data: [DONE]\n\n",
}

var toolCallStream = []string{
	"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
	"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},\"finish_reason\":null}]}\n\n",
	"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"Paris\\\"}\"}}]},\"finish_reason\":null}]}\n\n",
	"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
	"data: {\"id\":\"c2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"rec-model\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":12,\"total_tokens\":52}}\n\n",
	"data: [DONE]\n\n",
}

// cannedUpstream answers JSON requests with recJSONResponse and streaming
// ones with the stream named by the request's "mock_stream" field.
func cannedUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if !gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Request-Id", "upstream-req-1")
			_, _ = io.WriteString(w, recJSONResponse)
			return
		}
		if gjson.GetBytes(body, "mock_stream").String() == "tools" {
			sseWrite(w, toolCallStream...)
			return
		}
		sseWrite(w, reasoningStream...)
	})
}

func recOptions(ups ...*upstream) gatewayOptions {
	return gatewayOptions{
		Providers: providerBlock("rec", "openai", "", ups...),
		Models:    "model rec-model rec\n\t\tmodel rec-alias rec upstream-name",
	}
}

func postChat(t *testing.T, key, body string) (int, http.Header, []byte) {
	t.Helper()
	return call(t, http.MethodPost, "/v1/chat/completions", key, body)
}

func TestChatRequestBytesExact(t *testing.T) {
	up := cannedUpstream(t)
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "bytes")

	status, _, body := postChat(t, key, extensionBody)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := up.lastBody(t); !bytes.Equal(got, []byte(extensionBody)) {
		t.Fatalf("upstream received\n%s\nwant the client's bytes\n%s", got, extensionBody)
	}
	if got := up.lastHeader().Get("Authorization"); got != "Bearer upstream-key-0" {
		t.Fatalf("upstream Authorization %q: the provider key must replace the client's", got)
	}
	if !bytes.Equal(body, []byte(recJSONResponse)) {
		t.Fatalf("client received\n%s\nwant the upstream's bytes\n%s", body, recJSONResponse)
	}

	// With an alias, only the model name changes.
	aliased := strings.Replace(extensionBody, `"rec-model"`, `"rec-alias"`, 1)
	if status, _, body := postChat(t, key, aliased); status != http.StatusOK {
		t.Fatalf("alias: status %d: %s", status, body)
	}
	want, _ := sjson.SetBytes([]byte(aliased), "model", "upstream-name")
	if got := up.lastBody(t); !bytes.Equal(got, want) {
		t.Fatalf("aliased request reached the upstream as\n%s\nwant\n%s", got, want)
	}

	// Usage is billed from the JSON: 100 of the 120 prompt tokens were cached.
	recs := waitLedger(t, "bytes", 2)
	u := recs[0].Usage
	if recs[0].Source != "reported" || u.Input != 20 || u.CacheRead != 100 || u.Output != 30 || recs[0].Provider != "rec" || recs[0].Model != "rec-model" {
		t.Fatalf("ledger record %+v", recs[0])
	}
}

func TestChatStreamBytesExact(t *testing.T) {
	up := cannedUpstream(t)
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "stream")

	for i, tc := range []struct {
		name, body string
		want       []string
		wantOut    int64
	}{
		{"reasoning, client asked for usage", `{"model":"rec-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`, reasoningStream, 20},
		{"tool calls, client asked for usage", `{"model":"rec-model","stream":true,"stream_options":{"include_usage":true},"mock_stream":"tools","messages":[{"role":"user","content":"x"}]}`, toolCallStream, 12},
		{"reasoning, usage injected and stripped", `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"x"}]}`, stripUsage(reasoningStream), 20},
		{"tool calls, usage injected and stripped", `{"model":"rec-model","stream":true,"mock_stream":"tools","messages":[{"role":"user","content":"x"}]}`, stripUsage(toolCallStream), 12},
	} {
		status, hdr, body := postChat(t, key, tc.body)
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("Test %d (%s): status %d %q", i, tc.name, status, hdr.Get("Content-Type"))
		}
		if want := strings.Join(tc.want, ""); string(body) != want {
			t.Errorf("Test %d (%s): client received\n%s\nwant\n%s", i, tc.name, body, want)
		}
		if !gjson.GetBytes(up.lastBody(t), "stream_options.include_usage").Bool() {
			t.Errorf("Test %d (%s): the upstream was not asked for usage", i, tc.name)
		}
		recs := waitLedger(t, "stream", i+1)
		if r := recs[len(recs)-1]; r.Usage.Output != tc.wantOut || r.Source != "reported" {
			t.Errorf("Test %d (%s): ledger %+v", i, tc.name, r)
		}
	}
}

// stripUsage is what a client that did not ask for usage must see of a
// stream sent with include_usage: no usage chunk, no "usage":null.
func stripUsage(events []string) []string {
	var out []string
	for _, e := range events {
		if strings.Contains(e, `"choices":[]`) {
			continue
		}
		out = append(out, strings.ReplaceAll(e, `,"usage":null`, ""))
	}
	return out
}

// TestChatFlushesEachEvent: the upstream sends event k+1 only after the
// client has received event k.
func TestChatFlushesEachEvent(t *testing.T) {
	received := make(chan int, 16)
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for k := 0; k < 5; k++ {
			_, _ = io.WriteString(w, `data: {"id":"f","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}`+"\n\n")
			w.(http.Flusher).Flush()
			select {
			case got := <-received:
				if got != k {
					t.Errorf("client reported event %d, want %d", got, k)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the client never received event %d before the upstream sent the next one", k)
				return
			case <-r.Context().Done():
				return
			}
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "flush")

	resp := openStream(t, context.Background(), key, `{"model":"rec-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	k := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "data: {") {
			received <- k
			k++
		}
		if line == "data: [DONE]" {
			break
		}
	}
	if k != 5 {
		t.Fatalf("client received %d events, want 5", k)
	}
	// The upstream sent no usage: the gateway estimates and says so.
	if r := waitLedger(t, "flush", 1)[0]; r.Source != "estimated" || r.Usage.Output <= 0 {
		t.Fatalf("ledger %+v, want an estimated record", r)
	}
}

// TestChatDisconnectSettlesPartialOnce: the client leaves mid-stream; the
// upstream request is cancelled and exactly one partial record is written.
func TestChatDisconnectSettlesPartialOnce(t *testing.T) {
	cancelled := make(chan struct{})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "text/event-stream")
		for k := 0; ; k++ {
			_, err := io.WriteString(w, `data: {"id":"d","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"more words "},"finish_reason":null}]}`+"\n\n")
			if err == nil {
				w.(http.Flusher).Flush()
			}
			select {
			case <-r.Context().Done():
				close(cancelled)
				return
			case <-time.After(20 * time.Millisecond):
			}
			if k > 2000 {
				t.Error("the upstream request was never cancelled")
				return
			}
		}
	})
	startGateway(t, recOptions(up))
	key, _ := createKey(t, "leaver")

	ctx, cancel := context.WithCancel(context.Background())
	resp := openStream(t, ctx, key, `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"tell me a long story"}]}`)
	sc := bufio.NewScanner(resp.Body)
	for n := 0; n < 3 && sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	cancel()
	resp.Body.Close()
	select {
	case <-cancelled:
	case <-time.After(15 * time.Second):
		t.Fatal("the upstream request was not cancelled after the client left")
	}
	rec := waitLedger(t, "leaver", 1)[0]
	if rec.Source != "partial" || rec.Usage.Output <= 0 {
		t.Fatalf("ledger %+v, want one partial record with the delivered output", rec)
	}
	time.Sleep(500 * time.Millisecond)
	if n := len(ledgerOf(t, "leaver")); n != 1 {
		t.Fatalf("%d records after the disconnect, want exactly 1", n)
	}
}

func TestChatRetries(t *testing.T) {
	failing := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
	})
	limited := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.WriteHeader(http.StatusTooManyRequests)
	})
	good := cannedUpstream(t)
	// The round-robin start varies, so every attempt order is covered by
	// sending several requests: each must succeed, on the good upstream.
	startGateway(t, recOptions(failing, limited, good))
	key, _ := createKey(t, "retry")
	for i := 0; i < 3; i++ {
		status, _, body := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`)
		if status != http.StatusOK || !bytes.Equal(body, []byte(recJSONResponse)) {
			t.Fatalf("request %d: status %d %s", i, status, body)
		}
	}
	if good.hits.Load() != 3 || failing.hits.Load() == 0 || limited.hits.Load() == 0 {
		t.Fatalf("hits good=%d failing=%d limited=%d", good.hits.Load(), failing.hits.Load(), limited.hits.Load())
	}
	// A provider whose every attempt fails passes the last error through.
	startGateway(t, recOptions(failing))
	key, _ = createKey(t, "retry2")
	before := failing.hits.Load()
	status, _, body := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "overloaded") {
		t.Fatalf("all attempts failed: %d %s", status, body)
	}
	if got := failing.hits.Load() - before; got != 3 {
		t.Fatalf("%d attempts, want 3 (1 + 2 retries)", got)
	}
}

// TestChatNoRetryAfterFirstByte: an upstream that dies mid-stream is not
// retried: the client already has part of an answer.
func TestChatNoRetryAfterFirstByte(t *testing.T) {
	dying := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		sseWrite(w, reasoningStream[0], reasoningStream[1])
		panic(http.ErrAbortHandler)
	})
	startGateway(t, recOptions(dying, dying))
	key, _ := createKey(t, "dying")
	_, _, body := postChat(t, key, `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"x"}]}`)
	if !strings.Contains(string(body), "Let me think") {
		t.Fatalf("client got %q", body)
	}
	if got := dying.hits.Load(); got != 1 {
		t.Fatalf("%d upstream attempts, want 1: no retry after the first byte", got)
	}
	if rec := waitLedger(t, "dying", 1)[0]; rec.Outcome == "ok" {
		t.Fatalf("ledger %+v: a broken stream is not ok", rec)
	}
}

func TestChatErrors(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if gjson.GetBytes(body, "hang").Bool() {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"upstream says no","type":"invalid_request_error","param":"messages","code":"bad_thing"}}`)
	})
	o := recOptions(up)
	o.Providers = providerBlock("rec", "openai", "\t\t\ttimeout 1s\n\t\t\tretries 0", up)
	o.Extra = "max_request_body 64KiB"
	startGateway(t, o)
	key, _ := createKey(t, "errors")

	status, _, body := postChat(t, key, `{"model":"rec-model","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusBadRequest || string(body) != `{"error":{"message":"upstream says no","type":"invalid_request_error","param":"messages","code":"bad_thing"}}` {
		t.Fatalf("upstream error not passed through: %d %s", status, body)
	}
	status, _, body = postChat(t, key, `{"model":"rec-model","hang":true,"messages":[{"role":"user","content":"x"}]}`)
	if e := decodeError(t, body); status != http.StatusGatewayTimeout || e.code() != "upstream_timeout" {
		t.Fatalf("hung upstream: %d %s", status, body)
	}
	big := `{"model":"rec-model","messages":[{"role":"user","content":"` + strings.Repeat("a", 70<<10) + `"}]}`
	status, _, body = postChat(t, key, big)
	if status != http.StatusRequestEntityTooLarge || decodeError(t, body).code() != "request_too_large" {
		t.Fatalf("large body: %d %s", status, body)
	}
	status, _, body = postChat(t, key, `{"model":"nope","messages":[{"role":"user","content":"x"}]}`)
	if status != http.StatusNotFound || decodeError(t, body).code() != "model_not_found" {
		t.Fatalf("unknown model: %d %s", status, body)
	}
	hits := up.hits.Load()
	for i, tc := range []struct{ body, param string }{
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}]`, ""},
		{`{"messages":[{"role":"user","content":"x"}]}`, "model"},
		{`{"model":5,"messages":[{"role":"user","content":"x"}]}`, "model"},
		{`{"model":"rec-model"}`, "messages"},
		{`{"model":"rec-model","messages":{}}`, "messages"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"stop":["a","b","c","d","e"]}`, "stop"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"temperature":2}`, "temperature"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"temperature":-0.1}`, "temperature"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"top_p":0}`, "top_p"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"top_p":1.5}`, "top_p"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"frequency_penalty":2.5}`, "frequency_penalty"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"presence_penalty":-3}`, "presence_penalty"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"max_tokens":0}`, "max_tokens"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"max_tokens":1.5}`, "max_tokens"},
		{`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"stream":"yes"}`, "stream"},
	} {
		status, _, body := postChat(t, key, tc.body)
		e := decodeError(t, body)
		if status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" {
			t.Errorf("Test %d: %s: status %d %s", i, tc.body, status, body)
			continue
		}
		if tc.param != "" && (e.Error.Param == nil || *e.Error.Param != tc.param) {
			t.Errorf("Test %d: %s: param %v, want %s", i, tc.body, e.Error.Param, tc.param)
		}
	}
	if up.hits.Load() != hits {
		t.Fatal("an invalid request reached the upstream")
	}
	// Limits are inclusive where the contract says so.
	for _, ok := range []string{
		`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"temperature":0,"top_p":1,"frequency_penalty":-2,"presence_penalty":2,"stop":["a","b","c","d"],"max_tokens":1}`,
		`{"model":"rec-model","messages":[{"role":"user","content":"x"}],"stop":"x","temperature":1.99}`,
	} {
		if status, _, body := postChat(t, key, ok); status != http.StatusBadRequest || !strings.Contains(string(body), "upstream says no") {
			t.Errorf("valid request %s was not forwarded: %d %s", ok, status, body)
		}
	}
}

// TestChatOpenAISDK uses the official Go SDK against the mock provider.
func TestChatOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{})
	key, _ := createKey(t, "sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()

	r, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello SDK")},
	}, option.WithJSONSet("enable_thinking", false), option.WithJSONSet("top_k", 5))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Choices[0].Message.Content, "Hello SDK") || r.Choices[0].FinishReason != "stop" || r.Usage.PromptTokens == 0 {
		t.Fatalf("completion %+v", r)
	}

	for _, includeUsage := range []bool{false, true} {
		params := openai.ChatCompletionNewParams{
			Model:    "mock-reasoner",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Stream it")},
		}
		if includeUsage {
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		}
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		acc := openai.ChatCompletionAccumulator{}
		sawUsage := false
		for stream.Next() {
			c := stream.Current()
			acc.AddChunk(c)
			if c.Usage.TotalTokens > 0 {
				sawUsage = true
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if sawUsage != includeUsage {
			t.Fatalf("include_usage=%v: usage chunk seen=%v", includeUsage, sawUsage)
		}
		if !strings.Contains(acc.Choices[0].Message.Content, "Stream it") || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("include_usage=%v: accumulated %+v", includeUsage, acc.Choices[0])
		}
	}

	tools, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       "get_weather",
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tools.Choices[0].FinishReason != "tool_calls" || len(tools.Choices[0].Message.ToolCalls) != 1 || tools.Choices[0].Message.ToolCalls[0].Function.Name != "get_weather" {
		t.Fatalf("tool call %+v", tools.Choices[0])
	}

	vision, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "mock-gpt",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this picture?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64,iVBORw0KGgo="}),
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	if vision.Choices[0].Message.Content == "" {
		t.Fatalf("vision answer %+v", vision)
	}
	// Every request above is in the ledger, once.
	waitLedger(t, "sdk", 5)
}
