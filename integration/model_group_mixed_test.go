package integration

import (
	"context"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/tidwall/gjson"
)

// TestModelGroupMixedProtocols: a model group of an anthropic and an
// openai deployment, balanced round robin, answers a Messages client
// from both (passed through to the one, translated for the other), each
// request billed at the price of the deployment that served it; a
// stream goes through each; and a group whose anthropic deployment
// answers 429 moves to its openai one.
func TestModelGroupMixedProtocols(t *testing.T) {
	limited := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	})
	// The openai deployment: a recorder in front of the mock, to see
	// what protocol each request reached it in.
	mock, _ := url.Parse(baseURL + "/mock")
	oa := newGoogleFake(t, &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(mock) }})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("limited", "anthropic", "", limited) + "\n" +
			fmt.Sprintf("provider oa-rec {\n\t\t\tprotocol openai\n\t\t\tbase_url %s/v1\n\t\t\tapi_key mock-upstream-key\n\t\t}", oa.URL),
		Models: "model mixed {\n\t\t\tto mock-anthropic mock-claude\n\t\t\tto oa-rec mock-gpt\n\t\t\tlb_policy round_robin\n\t\t}\n" +
			"\t\tmodel mixed-429 {\n\t\t\tto limited claude-x\n\t\t\tto oa-rec mock-gpt\n\t\t\tlb_policy round_robin\n\t\t}",
		Prices: `{"currency":"USD","models":{"mock-anthropic/mock-claude":{"tiers":[{"input":"3","output":"15"}]},"oa-rec/mock-gpt":{"tiers":[{"input":"1","output":"2"}]}}}`,
	})
	key, _ := createKey(t, "mixed-group")
	client := anthropicClient(key)
	ctx := context.Background()
	ask := func(model, text string) anthropic.Usage {
		t.Helper()
		m, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: anthropic.Model(model), MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Content) == 0 || !strings.Contains(m.Content[0].Text, text) || m.Usage.OutputTokens == 0 {
			t.Fatalf("%s: message %+v", model, m)
		}
		return m.Usage
	}
	var shown []anthropic.Usage
	for _, text := range []string{"Hello one", "Hello two", "Hello three", "Hello four"} {
		shown = append(shown, ask("mixed", text))
	}
	// A stream through each deployment.
	for _, text := range []string{"Stream one", "Stream two"} {
		stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
			Model: "mixed", MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
		})
		var m anthropic.Message
		for stream.Next() {
			if err := m.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(m.Content) == 0 || !strings.Contains(m.Content[0].Text, text) || m.StopReason != anthropic.StopReasonEndTurn || m.Usage.OutputTokens == 0 {
			t.Fatalf("stream %q: %+v", text, m)
		}
		shown = append(shown, m.Usage)
	}
	recs := waitLedger(t, "mixed-group", 6)
	prices := map[string][2]int64{"mock-anthropic/mock-claude": {3, 15}, "oa-rec/mock-gpt": {1, 2}}
	served := map[string]int{}
	streamed := map[string]bool{}
	for i, r := range recs {
		p, ok := prices[r.Deployment]
		u := shown[i]
		if !ok || r.Outcome != "ok" || !r.Priced || r.Endpoint != "messages" || r.Usage.Input != u.InputTokens || r.Usage.Output != u.OutputTokens {
			t.Errorf("Test %d: record %+v, client shown %+v", i, r, u)
			continue
		}
		served[r.Deployment]++
		if i >= 4 {
			streamed[r.Deployment] = true
		}
		want := new(big.Rat).SetFrac64(u.InputTokens*p[0]+u.OutputTokens*p[1], 1_000_000)
		if got, ok := new(big.Rat).SetString(r.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d (%s): cost %s, want %s", i, r.Deployment, r.Cost, want.FloatString(9))
		}
	}
	if served["mock-anthropic/mock-claude"] != 3 || served["oa-rec/mock-gpt"] != 3 || len(streamed) != 2 {
		t.Errorf("served %v, streamed by %v: want each deployment 3 requests and one stream", served, streamed)
	}

	// The anthropic deployment answers 429: each request moves to the
	// openai one, translated.
	ask("mixed-429", "Hello limited")
	ask("mixed-429", "Hello again")
	if limited.hits.Load() == 0 {
		t.Error("the limited deployment was never tried")
	}
	// Each request reached the openai deployment translated: a Chat
	// Completions request for its own upstream model.
	oa.mu.Lock()
	streams := 0
	for i, x := range oa.exchanges {
		<-x.done
		if x.path != "/v1/chat/completions" || gjson.Get(x.body, "model").Str != "mock-gpt" || gjson.Get(x.body, "messages.0.role").Str != "user" ||
			gjson.Get(x.body, "max_completion_tokens").Int() != 100 {
			t.Errorf("openai exchange %d: %s %s", i, x.path, x.body)
		}
		if gjson.Get(x.body, "stream").Bool() {
			streams++
		}
	}
	if len(oa.exchanges) != 5 || streams != 1 {
		t.Errorf("the openai deployment got %d requests (%d streams), want 5 (1)", len(oa.exchanges), streams)
	}
	oa.mu.Unlock()
	recs = waitLedger(t, "mixed-group", 8)
	for _, r := range recs[6:] {
		if r.Deployment != "oa-rec/mock-gpt" || r.Outcome != "ok" || r.Provider != "oa-rec" {
			t.Errorf("429 group: record %+v", r)
		}
	}

	// A Chat Completions client reaches both deployments of the group
	// too, a stream through each.
	for _, text := range []string{"Chat one", "Chat two"} {
		status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key,
			`{"model":"mixed","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"`+text+`"}]}`)
		if status != 200 || !strings.Contains(string(body), `"finish_reason":"stop"`) || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
			t.Fatalf("chat stream %d:\n%s", status, body)
		}
	}
	recs = waitLedger(t, "mixed-group", 10)
	if a, b := recs[8].Deployment, recs[9].Deployment; a == b || recs[8].Usage.Output == 0 || recs[9].Usage.Output == 0 {
		t.Errorf("chat records %+v %+v: want one by each deployment", recs[8], recs[9])
	}

	// count_tokens cannot go to whichever deployment the balancer picks:
	// it is estimated for a group not all on Messages.
	status, hdr, body := call(t, http.MethodPost, "/v1/messages/count_tokens", key,
		`{"model":"mixed","messages":[{"role":"user","content":"How many?"}]}`, "anthropic-version", "2023-06-01")
	if status != 200 || hdr.Get("X-Air-Token-Count") != "estimate" || gjson.GetBytes(body, "input_tokens").Int() == 0 {
		t.Errorf("count_tokens %d %v %s", status, hdr, body)
	}
}

// TestFallbackLegsPerModel: two fallbacks of the same protocol, reached
// translated, each get the request with their own max_output_tokens (as
// max_tokens): the first fails, and the second's upstream gets its own,
// not the first's.
func TestFallbackLegsPerModel(t *testing.T) {
	down := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"down"}}`)
	})
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-b","content":[{"type":"text","text":"Hi there"}],`+
			`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":2}}`)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("down-oa", "openai", "retries 0", down) + "\n" + providerBlock("down-an", "anthropic", "retries 0", down) + "\n" +
			providerBlock("up-an", "anthropic", "retries 0", up),
		Models: "model gpt-first down-oa {\n\t\t\tfallback claude-a claude-b\n\t\t}\n" +
			"\t\tmodel claude-a down-an {\n\t\t\tmax_output_tokens 111\n\t\t}\n" +
			"\t\tmodel claude-b up-an {\n\t\t\tmax_output_tokens 222\n\t\t}",
	})
	key, _ := createKey(t, "legs")
	status, _, body := call(t, http.MethodPost, "/v1/chat/completions", key, `{"model":"gpt-first","messages":[{"role":"user","content":"Hello"}]}`)
	if status != 200 || gjson.GetBytes(body, "choices.0.message.content").Str != "Hi there" {
		t.Fatalf("answer %d %s", status, body)
	}
	if down.hits.Load() != 2 || up.hits.Load() != 1 {
		t.Fatalf("hits: down %d, up %d", down.hits.Load(), up.hits.Load())
	}
	up.mu.Lock()
	sent := up.bodies[0]
	up.mu.Unlock()
	if got := gjson.GetBytes(sent, "max_tokens").Int(); got != 222 {
		t.Errorf("claude-b got max_tokens %d, want its own 222: %s", got, sent)
	}
	if r := waitLedger(t, "legs", 1)[0]; r.ServedModel != "claude-b" || r.Outcome != "ok" {
		t.Errorf("record %+v", r)
	}
}
