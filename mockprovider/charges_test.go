package mockprovider

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestChargeKnobs checks that the mock_* charge fields make each protocol
// report the charges as the provider would: chat audio tokens, Anthropic's
// server_tool_use and container (cumulative in the last message_delta),
// and Responses tool call items.
func TestChargeKnobs(t *testing.T) {
	base := newServer(t, Config{})
	_, _, chat := post(t, base+"/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hello there"}],"mock_audio_tokens":2}`)
	if u := gjson.Get(chat, "usage"); u.Get("prompt_tokens_details.audio_tokens").Int() != 2 || u.Get("completion_tokens_details.audio_tokens").Int() != 2 {
		t.Errorf("chat usage %s", u.Raw)
	}
	_, _, plain := post(t, base+"/chat/completions", `{"model":"mock-gpt","messages":[{"role":"user","content":"hello there"}]}`)
	if gjson.Get(plain, "usage.prompt_tokens_details.audio_tokens").Int() != 0 {
		t.Errorf("chat without the knob reports audio: %s", plain)
	}

	msgBody := `{"model":"mock-claude","max_tokens":50,"messages":[{"role":"user","content":"hi"}],"mock_web_searches":2,"mock_web_fetches":1,"mock_code_sessions":1`
	_, _, msg := post(t, base+"/messages", msgBody+`}`, "anthropic-version", "2023-06-01")
	if gjson.Get(msg, "usage.server_tool_use.web_search_requests").Int() != 2 || gjson.Get(msg, "usage.server_tool_use.web_fetch_requests").Int() != 1 ||
		!strings.HasPrefix(gjson.Get(msg, "container.id").Str, "container_") {
		t.Errorf("messages %s", msg)
	}
	_, _, stream := post(t, base+"/messages", msgBody+`,"stream":true}`, "anthropic-version", "2023-06-01")
	var start, delta gjson.Result
	for _, ev := range parseSSE(t, stream) {
		switch ev.name {
		case "message_start":
			start = gjson.Get(ev.data, "message.usage")
		case "message_delta":
			delta = gjson.Parse(ev.data)
		}
	}
	if start.Get("server_tool_use").Exists() || delta.Get("usage.server_tool_use.web_search_requests").Int() != 2 ||
		delta.Get("delta.container.id").Str == "" {
		t.Errorf("messages stream: start usage %s, last delta %s", start.Raw, delta.Raw)
	}

	_, _, resp := post(t, base+"/responses", `{"model":"mock-gpt","input":"hi","mock_web_searches":2,"mock_file_searches":1,"mock_code_sessions":1,"mock_image_calls":1}`)
	types := map[string]int{}
	gjson.Get(resp, "output").ForEach(func(_, item gjson.Result) bool {
		types[item.Get("type").Str]++
		return true
	})
	containers := gjson.Get(resp, `output.#(type=="code_interpreter_call")#.container_id`).Array()
	if types["web_search_call"] != 2 || types["file_search_call"] != 1 || types["code_interpreter_call"] != 2 || types["image_generation_call"] != 1 ||
		types["message"] != 1 || len(containers) != 2 || containers[0].Str != containers[1].Str {
		t.Errorf("responses output %v: %s", types, resp)
	}
}
