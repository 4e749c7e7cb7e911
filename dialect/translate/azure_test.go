package translate

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// azureStream is Azure OpenAI's Chat Completions stream: a first chunk of
// the prompt's content filter results, with an empty id and model and no
// choices, then the answer's chunks, which name the deployed model.
const azureStream = "data: {\"choices\":[],\"created\":0,\"id\":\"\",\"model\":\"\",\"object\":\"\",\"prompt_filter_results\":[{\"prompt_index\":0,\"content_filter_results\":{}}]}\n\n" +
	"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null,\"content_filter_results\":{}}],\"usage\":null}\n\n" +
	"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n" +
	"data: {\"id\":\"chatcmpl-az2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o-2024-11-20\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}\n\n" +
	"data: [DONE]\n\n"

// A translated answer names the model the provider reported (Azure's
// deployed model and version, not the deployment nor the client's
// alias), as a passed-through answer does, and its id is the provider's:
// Azure's first chunk, which names neither, does not start the answer.
func TestAzureStreamNamesItsModel(t *testing.T) {
	for _, n := range []int{0, 7} {
		x := mustRequest(t, Responses, Chat, `{"model":"gpt-az","stream":true,"input":"hi"}`, Options{})
		out := answer(t, x, 200, sse, azureStream, n).Body.String()
		created := gjson.Get(dataLines(out)[0], "response")
		completed := gjson.Get(dataLines(out)[len(dataLines(out))-1], "response")
		if created.Get("id").Str != "resp_az2" || created.Get("model").Str != "gpt-4o-2024-11-20" ||
			completed.Get("id").Str != "resp_az2" || completed.Get("model").Str != "gpt-4o-2024-11-20" || completed.Get("output.0.content.0.text").Str != "Hi" {
			t.Errorf("pieces of %d: responses stream\n%s", n, out)
		}
		x = mustRequest(t, Messages, Chat, `{"model":"gpt-az","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, Options{})
		out = answer(t, x, 200, sse, azureStream, n).Body.String()
		msg := gjson.Get(dataLines(out)[0], "message")
		if msg.Get("id").Str != "chatcmpl-az2" || msg.Get("model").Str != "gpt-4o-2024-11-20" || !strings.Contains(out, `"text":"Hi"`) {
			t.Errorf("pieces of %d: messages stream\n%s", n, out)
		}
	}
}

// An answer that names no model is named by the client's model, as a
// cloud's (Bedrock's) is; a stream that ends at once still starts.
func TestAnswerWithoutModelNamesTheClients(t *testing.T) {
	x := mustRequest(t, Responses, Chat, `{"model":"gpt-az","input":"hi"}`, Options{})
	out := answer(t, x, 200, "application/json", `{"id":"chatcmpl-1","object":"chat.completion","created":1,"choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`, 0).Body.String()
	if gjson.Get(out, "model").Str != "gpt-az" || gjson.Get(out, "id").Str != "resp_1" {
		t.Errorf("answer %s", out)
	}
	first := azureStream[:strings.Index(azureStream, "\n\n")+2]
	x = mustRequest(t, Responses, Chat, `{"model":"gpt-az","stream":true,"input":"hi"}`, Options{})
	lines := dataLines(answer(t, x, 200, sse, first+"data: [DONE]\n\n", 0).Body.String())
	if len(lines) < 3 || gjson.Get(lines[0], "type").Str != "response.created" || gjson.Get(lines[0], "response.model").Str != "gpt-az" ||
		gjson.Get(lines[len(lines)-1], "type").Str != "response.completed" {
		t.Errorf("stream %q", lines)
	}
}
