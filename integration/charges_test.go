package integration

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// chargesPrices prices the mock's models with rules for the charges beyond
// plain tokens; mock-reasoner has none of them.
const chargesPrices = `{"currency":"USD","models":{
	"mock-gpt":{"tiers":[{"input":"0.80","output":"2.00"}],"audio":{"input":"40","output":"80"},
		"tools":{"web_search":"0.01","file_search":"0.0025","code_session":"0.03","image_generation":"0.04"}},
	"mock-claude":{"tiers":[{"input":"3","output":"15"}],"tools":{"web_search":"0.01","web_fetch":"0","code_session":"0.05"}},
	"mock-reasoner":{"tiers":[{"input":"2","output":"8"}]},
	"gpt-image-1":{"tiers":[{"input":"5","output":"40"}],"image_tokens":{"input":"10","output":"40"},"image":"0.042"}}}`

// TestChargesBilled sends, through the gateway to the mock provider,
// answers that report audio tokens (chat, whole and streamed), Anthropic
// server tool calls and a code execution container (streamed), Responses
// tool call items (whole and streamed), and gpt-image-1's image tokens,
// and checks each ledger record's usage against what the client saw and
// its cost, exactly, against the price file; a model without tool rules
// records its searches as unpriced, never as a zero cost.
func TestChargesBilled(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: chargesPrices, Extra: "tasks {\n\t\t\tpoll_interval 200ms\n\t\t}"})
	d := decimal.RequireFromString
	tokens := func(n int64, perMillion string) decimal.Decimal {
		return decimal.NewFromInt(n).Mul(d(perMillion)).Div(decimal.NewFromInt(1_000_000))
	}
	calls := func(n int64, each string) decimal.Decimal { return decimal.NewFromInt(n).Mul(d(each)) }
	const prompt = "please tell me a little about the price of audio tokens and of web searches"

	type want struct {
		cost     decimal.Decimal
		unpriced []string
		check    func(r ledgerRecord) bool
	}
	one := func(user string) ledgerRecord { return waitLedger(t, user, 1)[0] }
	verify := func(name string, r ledgerRecord, w want) {
		t.Helper()
		if !r.Priced || !d(r.Cost).Equal(w.cost) || !reflect.DeepEqual(r.Unpriced, w.unpriced) || !w.check(r) {
			t.Errorf("%s: record %+v, want cost %s unpriced %v", name, r, w.cost, w.unpriced)
		}
	}

	// Chat, whole: audio in and out at the audio rates.
	key, _ := createKey(t, "ch-chat")
	status, _, raw := postChat(t, key, `{"model":"mock-gpt","messages":[{"role":"user","content":"`+prompt+`"}],"mock_audio_tokens":4}`)
	u := gjson.GetBytes(raw, "usage")
	p, c := u.Get("prompt_tokens").Int(), u.Get("completion_tokens").Int()
	ai, ao := u.Get("prompt_tokens_details.audio_tokens").Int(), u.Get("completion_tokens_details.audio_tokens").Int()
	if status != http.StatusOK || ai != 4 || ao != 4 {
		t.Fatalf("chat: %d %s", status, raw)
	}
	verify("chat", one("ch-chat"), want{
		cost: tokens(p-ai, "0.80").Add(tokens(ai, "40")).Add(tokens(c-ao, "2.00")).Add(tokens(ao, "80")),
		check: func(r ledgerRecord) bool {
			return r.Usage.Input == p && r.Usage.AudioInput == 4 && r.Usage.Output == c && r.Usage.AudioOutput == 4
		}})

	// Chat, streamed: the usage chunk the gateway asked for carries them.
	key, _ = createKey(t, "ch-chatstream")
	status, _, raw = postChat(t, key, `{"model":"mock-gpt","stream":true,"messages":[{"role":"user","content":"`+prompt+`"}],"mock_audio_tokens":3}`)
	if status != http.StatusOK || strings.Contains(string(raw), `"audio_tokens"`) {
		t.Fatalf("chat stream: %d, the client, which did not ask for usage, got it: %s", status, raw)
	}
	r := one("ch-chatstream")
	verify("chat stream", r, want{
		cost: tokens(r.Usage.Input-3, "0.80").Add(tokens(3, "40")).Add(tokens(r.Usage.Output-3, "2.00")).Add(tokens(3, "80")),
		check: func(r ledgerRecord) bool {
			return r.Source == "reported" && r.Usage.Input > 3 && r.Usage.AudioInput == 3 && r.Usage.AudioOutput == 3
		}})

	// Messages, streamed: server_tool_use is cumulative in message_delta,
	// the container comes in its delta.
	key, _ = createKey(t, "ch-claude")
	status, _, raw = call(t, http.MethodPost, "/v1/messages", key, `{"model":"mock-claude","max_tokens":200,"stream":true,`+
		`"messages":[{"role":"user","content":"`+prompt+`"}],"mock_web_searches":3,"mock_web_fetches":2,"mock_code_sessions":1}`,
		"anthropic-version", "2023-06-01")
	var last gjson.Result
	for _, ev := range sseData(raw) {
		if e := gjson.Parse(ev); e.Get("type").Str == "message_delta" {
			last = e
		}
	}
	in, out := last.Get("usage.input_tokens").Int(), last.Get("usage.output_tokens").Int()
	if status != http.StatusOK || in == 0 || out == 0 || last.Get("usage.server_tool_use.web_search_requests").Int() != 3 {
		t.Fatalf("messages stream: %d %s", status, raw)
	}
	verify("messages stream", one("ch-claude"), want{
		cost: tokens(in, "3").Add(tokens(out, "15")).Add(calls(3, "0.01")).Add(calls(1, "0.05")),
		check: func(r ledgerRecord) bool {
			return r.Usage.WebSearches == 3 && r.Usage.WebFetches == 2 && r.Usage.CodeSessions == 1 && r.Usage.Input == in
		}})

	// Responses, whole and streamed: the tool call items.
	tools := `"mock_web_searches":2,"mock_file_searches":1,"mock_code_sessions":1,"mock_image_calls":1`
	for _, stream := range []bool{false, true} {
		user := "ch-resp"
		body := `{"model":"mock-gpt","input":"` + prompt + `",` + tools + `}`
		if stream {
			user, body = "ch-respstream", `{"model":"mock-gpt","stream":true,"input":"`+prompt+`",`+tools+`}`
		}
		key, _ = createKey(t, user)
		status, _, raw = call(t, http.MethodPost, "/v1/responses", key, body)
		usage := gjson.GetBytes(raw, "usage")
		if stream {
			for _, ev := range sseData(raw) {
				if e := gjson.Parse(ev); e.Get("type").Str == "response.completed" {
					usage = e.Get("response.usage")
				}
			}
		}
		in, out := usage.Get("input_tokens").Int(), usage.Get("output_tokens").Int()
		if status != http.StatusOK || in == 0 {
			t.Fatalf("responses (stream %v): %d %s", stream, status, raw)
		}
		verify(user, one(user), want{
			cost: tokens(in, "0.80").Add(tokens(out, "2.00")).Add(calls(2, "0.01")).Add(calls(1, "0.0025")).
				Add(calls(1, "0.03")).Add(calls(1, "0.04")),
			check: func(r ledgerRecord) bool {
				u := r.Usage
				return u.WebSearches == 2 && u.FileSearches == 1 && u.CodeSessions == 1 && u.ImageCalls == 1 && u.Input == in
			}})
	}

	// A model without tool rules: the searches are recorded, and marked
	// unpriced, and only the tokens cost.
	key, _ = createKey(t, "ch-unpriced")
	status, _, raw = call(t, http.MethodPost, "/v1/responses", key, `{"model":"mock-reasoner","input":"`+prompt+`","mock_web_searches":2,"mock_image_calls":1}`)
	in, out = gjson.GetBytes(raw, "usage.input_tokens").Int(), gjson.GetBytes(raw, "usage.output_tokens").Int()
	if status != http.StatusOK {
		t.Fatalf("responses unpriced: %d %s", status, raw)
	}
	verify("unpriced", one("ch-unpriced"), want{
		cost: tokens(in, "2").Add(tokens(out, "8")), unpriced: []string{"web_search", "image_generation"},
		check: func(r ledgerRecord) bool { return r.Usage.WebSearches == 2 && r.Usage.ImageCalls == 1 }})
	// The CSV export shows the marker.
	status, _, csv := callURL(t, http.MethodGet, "http://"+adminAddr+"/air/records?user=ch-unpriced&format=csv", "", "")
	if status != http.StatusOK || !strings.Contains(string(csv), ",web_search;image_generation,") {
		t.Errorf("csv: %d %s", status, csv)
	}

	// gpt-image-1: priced by the image tokens it reported, not per image.
	key, _ = createKey(t, "ch-image")
	status, task, raw := createTask(t, key, `{"model":"gpt-image-1","prompt":"a red fox","size":"1024x1024"}`)
	if status != http.StatusAccepted || task.Status != "succeeded" {
		t.Fatalf("image task: %d %s", status, raw)
	}
	r = one("ch-image")
	verify("image", r, want{
		cost: tokens(r.Usage.Input, "5").Add(tokens(r.Usage.ImageOutput, "40")),
		check: func(r ledgerRecord) bool {
			return r.Images == 1 && r.Usage.Input > 0 && r.Usage.Output >= 1000 && r.Usage.ImageOutput == r.Usage.Output
		}})
}

// sseData returns the data of each event of an SSE body.
func sseData(body []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, v)
		}
	}
	return out
}
