package integration

import (
	"context"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// respWeather is the function tool of the Responses tests.
var respWeather = responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "properties": map[string]any{
	"city": map[string]any{"type": "string"}, "unit": map[string]any{"type": "string"}}}, false)

// respInput is a Responses input of items.
func respInput(items ...responses.ResponseInputItemUnionParam) responses.ResponseNewParamsInputUnion {
	return responses.ResponseNewParamsInputUnion{OfInputItemList: items}
}

// respUser is a user message item.
func respUser(text string) responses.ResponseInputItemUnionParam {
	return responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)
}

// respStreamed is what a Responses stream showed a client.
type respStreamed struct {
	text, args, summary string
	argDeltas           int
	final               responses.Response
	finalType           string
	types               []string
}

// readRespStream reads a Responses stream to its end, checking that its
// sequence numbers count from 0.
func readRespStream(t *testing.T, params responses.ResponseNewParams, client openai.Client) (respStreamed, error) {
	t.Helper()
	stream := client.Responses.NewStreaming(context.Background(), params)
	var s respStreamed
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != int64(len(s.types)) {
			t.Fatalf("event %d has sequence_number %d", len(s.types), ev.SequenceNumber)
		}
		s.types = append(s.types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			s.text += ev.Delta
		case "response.function_call_arguments.delta":
			s.args += ev.Delta
			s.argDeltas++
		case "response.reasoning_summary_text.delta":
			s.summary += ev.Delta
		case "response.completed", "response.incomplete", "response.failed":
			s.final, s.finalType = ev.Response, ev.Type
		}
	}
	return s, stream.Err()
}

// asInput turns a response's output items into input items, as a client
// sends them back on its next turn.
func asInput(t *testing.T, out []responses.ResponseOutputItemUnion) []responses.ResponseInputItemUnionParam {
	t.Helper()
	var in []responses.ResponseInputItemUnionParam
	for _, it := range out {
		switch it.Type {
		case "reasoning":
			p := it.AsReasoning().ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfReasoning: &p})
		case "function_call":
			p := it.AsFunctionCall().ToParam()
			in = append(in, responses.ResponseInputItemUnionParam{OfFunctionCall: &p})
		case "message":
			in = append(in, responses.ResponseInputItemParamOfMessage(it.AsMessage().Content[0].Text, responses.EasyInputMessageRoleAssistant))
		default:
			t.Fatalf("output item of type %s", it.Type)
		}
	}
	return in
}

// callOutput is the function_call_output item of call id.
func callOutput(id, output string) responses.ResponseInputItemUnionParam {
	p := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	p.OfFunctionCallOutput.CallID = openai.String(id)
	return p
}

// TestDialectResponsesSDKToAnthropicModel drives mock-claude, an
// Anthropic-protocol model (whose mock requires max_tokens, checks
// thinking signatures and, in a tool loop with thinking on, that the
// turn's thinking comes back), with the OpenAI SDK's Responses API.
func TestDialectResponsesSDKToAnthropicModel(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: `{"currency":"USD","models":{"mock-claude":{"tiers":[{"input":"3","output":"15"}]}}}`})
	key, _ := createKey(t, "r2a")
	client := openAIClient(key)
	ctx := context.Background()

	// A plain answer, with instructions and no max_output_tokens (the
	// gateway sends Anthropic the default); store is dropped and said so.
	var httpResp *http.Response
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "mock-claude", Instructions: openai.String("Be terse."), Store: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello Responses client")},
	}, option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.OutputText(), "Hello Responses client") || r.Status != "completed" || !strings.HasPrefix(r.ID, "resp_") ||
		r.Usage.InputTokens == 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens || httpResp.Header.Get("X-Air-Dropped-Params") != "store" {
		t.Fatalf("response %s, dropped %q", r.RawJSON(), httpResp.Header.Get("X-Air-Dropped-Params"))
	}

	// A stream.
	s, err := readRespStream(t, responses.ResponseNewParams{Model: "mock-claude",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Stream to me")}}, client)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.text, "Stream to me") || s.finalType != "response.completed" || s.final.OutputText() != s.text ||
		s.final.Usage.OutputTokens == 0 || s.types[0] != "response.created" {
		t.Fatalf("stream %q %s %q", s.text, s.final.RawJSON(), s.types)
	}

	// A streamed function call, its arguments over many deltas, then the
	// turn with its output.
	s, err = readRespStream(t, responses.ResponseNewParams{Model: "mock-claude", Tools: []responses.ToolUnionParam{respWeather},
		Input: respInput(respUser("Weather in Oslo?"))}, client)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	for _, it := range s.final.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "toolu_") || s.argDeltas < 2 || call.Arguments != s.args || !gjson.Valid(s.args) {
		t.Fatalf("function call (%d argument deltas, %q) %s", s.argDeltas, s.args, s.final.RawJSON())
	}
	res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "mock-claude", Tools: []responses.ToolUnionParam{respWeather},
		Input: respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Weather in Oslo?")}, asInput(t, s.final.Output)...),
			callOutput(call.CallID, "12 degrees and rain"))...)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "completed" || res.OutputText() == "" {
		t.Fatalf("answer after the function output %s", res.RawJSON())
	}

	// Reasoning across two turns: the reasoning item carries the signed
	// thinking, which the mock requires back at the head of the tool
	// turn, with its signature.
	think := responses.ResponseNewParams{Model: "mock-claude", MaxOutputTokens: openai.Int(4096), Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
		Tools: []responses.ToolUnionParam{respWeather}, Include: []responses.ResponseIncludable{"reasoning.encrypted_content"}, Store: openai.Bool(false)}
	think.Input = respInput(respUser("Think about the weather in Oslo"))
	s, err = readRespStream(t, think, client)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.final.Output) != 2 || s.final.Output[0].Type != "reasoning" || s.final.Output[0].EncryptedContent == "" || s.summary == "" ||
		s.final.Output[0].Summary[0].Text != s.summary || s.final.Output[1].Type != "function_call" {
		t.Fatalf("reasoning turn %q: %s", s.summary, s.final.RawJSON())
	}
	turn := func(items []responses.ResponseInputItemUnionParam) (*responses.Response, error) {
		p := think
		p.Input = respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Think about the weather in Oslo")}, items...),
			callOutput(s.final.Output[1].CallID, "sunny"))...)
		return client.Responses.New(ctx, p)
	}
	second, err := turn(asInput(t, s.final.Output))
	if err != nil {
		t.Fatal(err)
	}
	if second.Status != "completed" || second.OutputText() == "" || second.Output[0].Type != "reasoning" || second.Output[0].EncryptedContent == "" {
		t.Fatalf("second turn %s", second.RawJSON())
	}
	// Without its reasoning item, or with a forged signature, the tool
	// turn is the provider's 400, in OpenAI's shape.
	// (ToParam keeps an item's JSON as it came, so the forged item is
	// made field by field.)
	forged := asInput(t, s.final.Output)
	rs := s.final.Output[0].AsReasoning()
	forged[0] = responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{ID: rs.ID,
		Summary:          []responses.ResponseReasoningItemSummaryParam{{Text: rs.Summary[0].Text}},
		EncryptedContent: openai.String("Zm9yZ2Vk")}}
	for i, items := range [][]responses.ResponseInputItemUnionParam{asInput(t, s.final.Output)[1:], forged} {
		_, err = turn(items)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" || !strings.Contains(apiErr.Message, "thinking") {
			t.Fatalf("Test %d: %v", i, err)
		}
	}

	// An image.
	img, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "mock-claude", Input: respInput(
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText("Hello Responses client"),
			{OfInputImage: &responses.ResponseInputImageParam{Detail: "auto", ImageURL: openai.String("data:image/png;base64,iVBORw0KGgo=")}},
		}, responses.EasyInputMessageRoleUser))})
	if err != nil {
		t.Fatal(err)
	}
	if img.Usage.InputTokens <= r.Usage.InputTokens {
		t.Fatalf("image input tokens %d, without %d", img.Usage.InputTokens, r.Usage.InputTokens)
	}

	// Eight exchanges reached the provider (two answered 400), each one
	// record of endpoint responses, priced on what the client was shown.
	recs := waitLedger(t, "r2a", 9)
	for i, tc := range []struct {
		rec   int
		usage responses.ResponseUsage
	}{{0, r.Usage}, {1, s.final.Usage}, {8, img.Usage}} {
		rec := recs[tc.rec]
		if tc.rec == 1 {
			rec, tc.usage = recs[4], s.final.Usage // the reasoning stream
		}
		if rec.Usage.Input+rec.Usage.CacheRead+rec.Usage.CacheCreation != tc.usage.InputTokens || rec.Usage.Output != tc.usage.OutputTokens ||
			rec.Endpoint != "responses" || rec.Model != "mock-claude" || rec.Provider != "mock-anthropic" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, rec, tc.usage)
		}
		want := new(big.Rat).SetFrac64(tc.usage.InputTokens*3+tc.usage.OutputTokens*15, 1_000_000)
		if got, ok := new(big.Rat).SetString(rec.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d: cost %s, want %s", i, rec.Cost, want.FloatString(9))
		}
	}
	for _, rec := range recs {
		if rec.Endpoint != "responses" {
			t.Errorf("record %+v", rec)
		}
	}
}

// TestDialectResponsesStateful: the stateful features of Responses on a
// translated model are a 400 naming them, whatever drop_params; a built-in
// tool is refused unless the model drops it.
func TestDialectResponsesStateful(t *testing.T) {
	startGateway(t, gatewayOptions{Models: "model drop-claude mock-anthropic mock-claude {\n\t\t\tdrop_params\n\t\t}"})
	key, _ := createKey(t, "r2a-state")
	for i, tc := range []struct {
		model, extra, param string
		status              int
	}{
		{"mock-claude", `"previous_response_id":"resp_1"`, "previous_response_id", 400},
		{"drop-claude", `"background":true`, "background", 400},
		{"mock-claude", `"conversation":"conv_1"`, "conversation", 400},
		{"mock-claude", `"tools":[{"type":"web_search_preview"}]`, "tools.web_search_preview", 400},
		{"drop-claude", `"tools":[{"type":"web_search_preview"}],"store":true`, "", 200},
		{"mock-claude", `"input":[{"type":"function_call_output","call_id":"call_x","output":"?"}]`, "", 400},
	} {
		body := `{"model":"` + tc.model + `","input":"hi",` + tc.extra + `}`
		if strings.Contains(tc.extra, `"input"`) {
			body = `{"model":"` + tc.model + `",` + tc.extra + `}`
		}
		status, hdr, out := call(t, http.MethodPost, "/v1/responses", key, body)
		if status != tc.status || (tc.param != "" && gjson.GetBytes(out, "error.param").Str != tc.param) ||
			(status == 400 && gjson.GetBytes(out, "error.type").Str != "invalid_request_error") {
			t.Errorf("Test %d: %d %s", i, status, out)
		}
		if status == 200 && hdr.Get("X-Air-Dropped-Params") != "tools.web_search_preview, store" {
			t.Errorf("Test %d: dropped %q", i, hdr.Get("X-Air-Dropped-Params"))
		}
	}
	// Only the one that was answered reached the provider.
	waitLedger(t, "r2a-state", 1)
}

// TestDialectResponsesSDKToChatOnlyModel drives a chat model of a
// dashscope provider, which speaks only Chat Completions, with the
// OpenAI SDK's Responses API: a plain answer, a stream, a streamed
// function call and its output's turn, an image, the exact ledger cost.
func TestDialectResponsesSDKToChatOnlyModel(t *testing.T) {
	startGateway(t, gatewayOptions{
		Providers: "provider mock-dash {\n\t\t\tprotocol dashscope\n\t\t\tbase_url http://localhost:9080/mock/v1\n\t\t\tapi_key mock-upstream-key\n\t\t}",
		Models:    "model mock-qwen mock-dash {\n\t\t\tkind chat\n\t\t}",
		Prices:    `{"currency":"USD","models":{"mock-qwen":{"tiers":[{"input":"0.8","output":"2"}]}}}`,
	})
	key, _ := createKey(t, "r2c")
	client := openAIClient(key)
	ctx := context.Background()
	var httpResp *http.Response
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "mock-qwen", Instructions: openai.String("Be terse."), Store: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello chat-only model")}}, option.WithResponseInto(&httpResp))
	if err != nil {
		t.Fatal(err)
	}
	// The dropped store shows that the request was translated (the mock
	// also speaks Responses, which a dashscope provider is not sent).
	if !strings.Contains(r.OutputText(), "Hello chat-only model") || r.Status != "completed" || r.Usage.InputTokens == 0 ||
		httpResp.Header.Get("X-Air-Dropped-Params") != "store" {
		t.Fatalf("response %s, dropped %q", r.RawJSON(), httpResp.Header.Get("X-Air-Dropped-Params"))
	}
	s, err := readRespStream(t, responses.ResponseNewParams{Model: "mock-qwen", Tools: []responses.ToolUnionParam{respWeather},
		Input: respInput(respUser("Weather in Oslo?"))}, client)
	if err != nil {
		t.Fatal(err)
	}
	var call responses.ResponseFunctionToolCall
	for _, it := range s.final.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	if call.Name != "get_weather" || !strings.HasPrefix(call.CallID, "call_") || s.argDeltas < 2 || call.Arguments != s.args || s.final.Usage.InputTokens == 0 {
		t.Fatalf("function call (%d argument deltas) %s", s.argDeltas, s.final.RawJSON())
	}
	res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "mock-qwen", Tools: []responses.ToolUnionParam{respWeather},
		Input: respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Weather in Oslo?")}, asInput(t, s.final.Output)...),
			callOutput(call.CallID, "12 degrees and rain"))...)})
	if err != nil || res.Status != "completed" || res.OutputText() == "" {
		t.Fatalf("answer after the function output %v %s", err, res.RawJSON())
	}
	st, err := readRespStream(t, responses.ResponseNewParams{Model: "mock-qwen", Input: respInput(
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
			responses.ResponseInputContentParamOfInputText("Stream with an image"),
			{OfInputImage: &responses.ResponseInputImageParam{Detail: "auto", ImageURL: openai.String("data:image/png;base64,iVBORw0KGgo=")}},
		}, responses.EasyInputMessageRoleUser))}, client)
	if err != nil || !strings.Contains(st.text, "Stream with an image") || st.finalType != "response.completed" || st.final.Usage.InputTokens <= r.Usage.InputTokens {
		t.Fatalf("image stream %v %q %s", err, st.text, st.final.RawJSON())
	}
	recs := waitLedger(t, "r2c", 4)
	for i, tc := range []struct {
		rec   int
		usage responses.ResponseUsage
	}{{0, r.Usage}, {1, s.final.Usage}, {3, st.final.Usage}} {
		rec := recs[tc.rec]
		if rec.Usage.Input+rec.Usage.CacheRead != tc.usage.InputTokens || rec.Usage.Output != tc.usage.OutputTokens || rec.Endpoint != "responses" || rec.Provider != "mock-dash" {
			t.Errorf("Test %d: record %+v, client shown %+v", i, rec, tc.usage)
		}
		want := new(big.Rat).SetFrac64(tc.usage.InputTokens*8+tc.usage.OutputTokens*20, 10_000_000)
		if got, ok := new(big.Rat).SetString(rec.Cost); !ok || got.Cmp(want) != 0 {
			t.Errorf("Test %d: cost %s, want %s", i, rec.Cost, want.FloatString(9))
		}
	}
}
