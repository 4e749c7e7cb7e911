package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tidwall/gjson"
)

// TestDialectResponsesSDKToGoogleModels drives a gemini and a vertex
// model with the OpenAI SDK's Responses API, through the cloud seam: a
// plain answer, a stream, a streamed function call and its output's
// turn, reasoning across two turns (its signature sent back, a forged one
// refused), an image, and the exact cost of each exchange.
func TestDialectResponsesSDKToGoogleModels(t *testing.T) {
	gc := newGoogleCloud(t, time.Hour)
	startGateway(t, gatewayOptions{Providers: gc.providers(), Models: googleModels, Prices: googlePrices})
	key, _ := createKey(t, "r2g")
	client := openAIClient(key)
	ctx := context.Background()
	var answers, models []string // the fakes' answers, in the ledger's order
	got := func(m googleModel) {
		_, answer, path, _ := m.fake.last(t)
		if !strings.Contains(path, "/"+m.upstream+":") {
			t.Errorf("%s: upstream path %s", m.name, path)
		}
		answers, models = append(answers, answer), append(models, m.name)
	}
	for _, m := range gc.models() {
		r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: m.name, Instructions: openai.String("Be terse."),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello Responses client")}})
		if err != nil {
			t.Fatal(err)
		}
		body, _, path, _ := m.fake.last(t)
		if r.OutputText() != "Mock reply to: Hello Responses client" || r.Status != "completed" || r.Usage.InputTokens == 0 ||
			!strings.HasSuffix(path, ":generateContent") || gjson.Get(body, "systemInstruction.parts.0.text").Str != "Be terse." {
			t.Fatalf("%s: response %s (sent %s to %s)", m.name, r.RawJSON(), body, path)
		}
		got(m)

		s, err := readRespStream(t, responses.ResponseNewParams{Model: m.name,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Stream me a longer answer please")}}, client)
		if err != nil {
			t.Fatal(err)
		}
		_, _, path, _ = m.fake.last(t)
		if s.text != "Mock reply to: Stream me a longer answer please" || s.final.OutputText() != s.text || s.final.Usage.OutputTokens == 0 ||
			!strings.HasSuffix(path, ":streamGenerateContent?alt=sse") {
			t.Fatalf("%s: stream %q %s (%s)", m.name, s.text, s.final.RawJSON(), path)
		}
		got(m)

		s, err = readRespStream(t, responses.ResponseNewParams{Model: m.name, Tools: []responses.ToolUnionParam{respWeather},
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
		if call.Name != "get_weather" || call.CallID == "" || call.Arguments != s.args || gjson.Get(call.Arguments, "query").Str != "Weather in Oslo?" {
			t.Fatalf("%s: function call %s", m.name, s.final.RawJSON())
		}
		got(m)
		res, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: m.name, Tools: []responses.ToolUnionParam{respWeather},
			Input: respInput(append(append([]responses.ResponseInputItemUnionParam{respUser("Weather in Oslo?")}, asInput(t, s.final.Output)...),
				callOutput(call.CallID, `{"temp":12}`))...)})
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if !strings.Contains(res.OutputText(), "Tool result:") || !strings.Contains(res.OutputText(), "12") ||
			gjson.Get(body, "contents.2.parts.0.functionResponse.name").Str != "get_weather" {
			t.Fatalf("%s: answer after the function output %s (sent %s)", m.name, res.RawJSON(), body)
		}
		got(m)

		// Reasoning: its text streams as the summary, and the reasoning
		// item sent back carries the signature to the second turn.
		s, err = readRespStream(t, responses.ResponseNewParams{Model: m.name, Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
			Input: respInput(respUser("Think about Oslo"))}, client)
		if err != nil {
			t.Fatal(err)
		}
		// (Gemini signs a part: its signature comes as a reasoning item of
		// its own, before the part it signs.)
		signed := -1
		for i, it := range s.final.Output {
			if it.Type == "reasoning" && it.EncryptedContent != "" {
				signed = i
			}
		}
		if s.summary != "Considering: Think about Oslo" || s.text == "" || s.final.OutputText() != s.text || s.final.Output[0].Type != "reasoning" || signed < 0 {
			t.Fatalf("%s: reasoning %q text %q %s", m.name, s.summary, s.text, s.final.RawJSON())
		}
		got(m)
		turn := func(items []responses.ResponseInputItemUnionParam) (*responses.Response, error) {
			in := append(append([]responses.ResponseInputItemUnionParam{respUser("Think about Oslo")}, items...), respUser("And Rome?"))
			return client.Responses.New(ctx, responses.ResponseNewParams{Model: m.name, Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortLow},
				Input: respInput(in...)})
		}
		second, err := turn(asInput(t, s.final.Output))
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if !strings.Contains(second.OutputText(), "Rome") || !strings.Contains(body, `"thoughtSignature"`) {
			t.Fatalf("%s: second turn %s (sent %s)", m.name, second.RawJSON(), body)
		}
		got(m)
		forged := asInput(t, s.final.Output)
		forged[signed] = responses.ResponseInputItemUnionParam{OfReasoning: &responses.ResponseReasoningItemParam{ID: "rs_1",
			Summary: []responses.ResponseReasoningItemSummaryParam{}, EncryptedContent: openai.String("forged")}}
		_, err = turn(forged)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Type != "invalid_request_error" {
			t.Fatalf("%s: forged signature: %v", m.name, err)
		}
		answers, models = append(answers, ""), append(models, "")

		img, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: m.name, Input: respInput(
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("What is this?"),
				{OfInputImage: &responses.ResponseInputImageParam{Detail: "auto", ImageURL: openai.String("data:image/png;base64," + pngPixel)}},
			}, responses.EasyInputMessageRoleUser))})
		if err != nil {
			t.Fatal(err)
		}
		body, _, _, _ = m.fake.last(t)
		if gjson.Get(body, "contents.0.parts.#(inlineData).inlineData.data").Str != pngPixel || img.OutputText() == "" {
			t.Fatalf("%s: image request %s answered %s", m.name, body, img.RawJSON())
		}
		got(m)
	}

	// One record per exchange, endpoint responses, each priced exactly on
	// what Gemini reported (thoughts at the output price).
	recs := waitLedger(t, "r2g", len(answers))
	for i, rec := range recs {
		if models[i] == "" {
			if rec.Status != 400 || rec.Endpoint != "responses" {
				t.Errorf("Test %d: the forged turn's record %+v", i, rec)
			}
			continue
		}
		if rec.Endpoint != "responses" || rec.Outcome != "ok" || rec.Provider != map[string]string{"gem-flash": "gem", "vtx-pro": "vtx"}[models[i]] {
			t.Errorf("Test %d: record %+v", i, rec)
		}
		checkCost(t, models[i], rec, models[i], answers[i])
	}
}
