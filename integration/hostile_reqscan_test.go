package integration

// Hostile clients against the request scan (issue #31): bodies that make
// the gateway read one thing while the provider reads another. Each case
// asserts the status, what reached the provider, the bill in the ledger,
// and that another tenant is still served.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/png"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

// lastWinsUpstream is a provider whose JSON parser keeps the last of
// repeated members, as Python's json does: a stream gets usage only when
// the stream_options.include_usage it reads is true. It reports 1,000
// prompt tokens and 50,000 completion tokens (49,990 of them reasoning)
// for a few bytes of visible text.
func lastWinsUpstream(t *testing.T) *upstream {
	return newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req map[string]json.RawMessage
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad json","type":"invalid_request_error"}}`, http.StatusBadRequest)
			return
		}
		var so map[string]json.RawMessage
		_ = json.Unmarshal(req["stream_options"], &so)
		const usage = `"usage":{"prompt_tokens":1000,"completion_tokens":50000,"total_tokens":51000,"completion_tokens_details":{"reasoning_tokens":49990}}`
		chunk := func(delta, finish string) string {
			return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"rec-model","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
		}
		events := []string{chunk(`{"role":"assistant","content":"ok"}`, "null"), chunk(`{}`, `"stop"`)}
		if string(so["include_usage"]) == "true" {
			events = append(events, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"rec-model","choices":[],`+usage+"}\n\n")
		}
		sseWrite(w, append(events, "data: [DONE]\n\n")...)
	})
}

// reasonerPrices: 1 USD per million prompt tokens, 10 per million
// completion tokens, so the upstream's report costs 0.501.
const reasonerPrices = `{"currency":"USD","models":{"rec-model":{"tiers":[{"input":"1","output":"10"}]},` +
	`"mock-embed":{"tiers":[{"input":"1","output":"1"}]},"mock-video":{"video_second":"0.1"}}}`

// streamText reads a whole streamed answer.
func streamText(t *testing.T, key, body string) (int, string) {
	t.Helper()
	status, _, raw := postChat(t, key, body)
	return status, string(raw)
}

// otherTenantServed checks that another user's plain request is answered
// and billed from the upstream's usage.
func otherTenantServed(t *testing.T, key, user string, n int) {
	t.Helper()
	status, raw := streamText(t, key, `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if status != http.StatusOK || !strings.Contains(raw, "[DONE]") {
		t.Fatalf("another tenant: %d %s", status, raw)
	}
	recs := waitLedger(t, user, n)
	if r := recs[len(recs)-1]; !sameDecimal(r.Cost, "0.501") {
		t.Fatalf("another tenant billed %+v, want 0.501", r)
	}
}

// TestHostileRepeatedIncludeUsage: a stream that repeats include_usage,
// in any spelling, is refused before it reaches the provider and costs
// nothing; an escaped spelling alone is read as include_usage and edited,
// so that the provider reports usage and the stream is billed 0.501, not
// an estimate from its visible text (0.000055 before the fix).
func TestHostileRepeatedIncludeUsage(t *testing.T) {
	up := lastWinsUpstream(t)
	o := recOptions(up)
	o.Prices = reasonerPrices
	startGateway(t, o)
	key, _ := createKey(t, "hostile-usage")
	other, _ := createKey(t, "hostile-usage-bob")
	msgs := `"messages":[{"role":"user","content":"think hard"}]`

	for i, tc := range []struct {
		options string
		param   string // the refusal's param; "" when served
	}{
		{`{"include_usage":true,"include_usage":false}`, "stream_options.include_usage"},
		{`{"include_usage":true,"include\u005fusage":false}`, "stream_options.include_usage"},
		{`{"include\u005Fusage":false,"include_usage":true}`, "stream_options.include_usage"},
	} {
		hits := up.hits.Load()
		status, _, raw := postChat(t, key, `{"model":"rec-model","stream":true,"stream_options":`+tc.options+`,`+msgs+`}`)
		e := decodeError(t, raw)
		if status != http.StatusBadRequest || e.Error.Type != "invalid_request_error" || e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Fatalf("Test %d: %d %s, want 400 naming %s", i, status, raw, tc.param)
		}
		if up.hits.Load() != hits {
			t.Fatalf("Test %d: a refused request reached the provider", i)
		}
	}
	// Refusals are not billed.
	time.Sleep(200 * time.Millisecond)
	if recs := ledgerOf(t, "hostile-usage"); len(recs) != 0 {
		t.Fatalf("refused requests left %d ledger records", len(recs))
	}

	// The escaped spelling alone is include_usage: switched on, billed from
	// the provider's report.
	status, raw := streamText(t, key, `{"model":"rec-model","stream":true,"stream_options":{"include\u005fusage":false},`+msgs+`}`)
	if status != http.StatusOK || !strings.Contains(raw, "[DONE]") || strings.Contains(raw, `"usage"`) {
		t.Fatalf("escaped include_usage: %d %s (the usage the client did not ask for must be stripped)", status, raw)
	}
	var sent map[string]json.RawMessage
	_ = json.Unmarshal(up.lastBody(t), &sent)
	if !strings.Contains(string(sent["stream_options"]), "true") {
		t.Fatalf("the provider read %s", sent["stream_options"])
	}
	recs := waitLedger(t, "hostile-usage", 1)
	if r := recs[0]; !sameDecimal(r.Cost, "0.501") || r.Usage.Output != 50000 || r.Usage.Input != 1000 {
		t.Fatalf("billed %+v, want 0.501 for 1,000 in and 50,000 out", r)
	}
	otherTenantServed(t, other, "hostile-usage-bob", 1)
}

// TestHostileRepeatedReadMembers: a member the gateway reads, repeated at
// any depth on any endpoint, gets 400 in the client's protocol naming it;
// nothing reaches a provider and nothing is billed.
func TestHostileRepeatedReadMembers(t *testing.T) {
	up := lastWinsUpstream(t)
	o := recOptions(up)
	o.Prices = reasonerPrices
	startGateway(t, o)
	key, _ := createKey(t, "hostile-repeat")
	other, _ := createKey(t, "hostile-repeat-bob")
	for i, tc := range []struct {
		path, body, param string
		anthropic         bool
	}{
		{"/v1/chat/completions", `{"model":"rec-model","max_tokens":10,"max_tokens":100000,"messages":[{"role":"user","content":"x"}]}`, "max_tokens", false},
		{"/v1/chat/completions", `{"model":"rec-model","messages":[{"role":"user","content":"x","c\u006fntent":"yyyyyyyy"}]}`, "messages[0].content", false},
		{"/v1/chat/completions", `{"model":"rec-model","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"bbbbbbbb"}]}]}`, "messages[0].content[0].text", false},
		{"/v1/chat/completions", `{"model":"rec-model","messages":[{"role":"user","content":"x"}],"messag\u0065s":[{"role":"user","content":"y"}]}`, "messages", false},
		{"/v1/responses", `{"model":"rec-model","input":"a","inp\u0075t":[{"role":"user","content":"bbbb"}]}`, "input", false},
		{"/v1/responses", `{"model":"rec-model","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`, "input[0].content[0].text", false},
		{"/v1/embeddings", `{"model":"mock-embed","input":"a","input":["b","c"]}`, "input", false},
		{"/v1/messages", `{"model":"rec-model","max_tokens":10,"system":[{"type":"text","text":"s","te\u0078t":"t"}],"messages":[{"role":"user","content":"x"}]}`, "system[0].text", true},
		{"/v1/images/generations", `{"model":"mock-image","prompt":"x","size":"256x256","si\u007ae":"1024x1024"}`, "size", false},
		{"/v1/tasks", `{"model":"mock-image","prompt":"x","n":1,"\u006e":4}`, "n", false},
	} {
		hits := up.hits.Load()
		status, _, raw := call(t, http.MethodPost, tc.path, key, tc.body)
		if status != http.StatusBadRequest {
			t.Fatalf("Test %d (%s): %d %s, want 400", i, tc.path, status, raw)
		}
		if tc.anthropic {
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(raw, &e) != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.param) {
				t.Fatalf("Test %d: %s, want Anthropic's error shape naming %s", i, raw, tc.param)
			}
		} else if e := decodeError(t, raw); e.Error.Param == nil || *e.Error.Param != tc.param {
			t.Fatalf("Test %d: %s, want param %s", i, raw, tc.param)
		}
		if up.hits.Load() != hits {
			t.Fatalf("Test %d: a refused request reached the provider", i)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if recs := ledgerOf(t, "hostile-repeat"); len(recs) != 0 {
		t.Fatalf("refused requests left %d ledger records", len(recs))
	}
	otherTenantServed(t, other, "hostile-repeat-bob", 1)
}

// TestHostileVideoDuration: a video create that asks the provider for 60
// seconds while giving duration 1 is refused (it was billed 0.10 for a
// 60 s video); a duration given as "duration" reaches OpenAI's Videos API
// as the seconds it reads, and is billed as made.
func TestHostileVideoDuration(t *testing.T) {
	o := tasksOptions()
	o.Prices = reasonerPrices
	startGateway(t, o)
	key, _ := createKey(t, "hostile-video")
	other, _ := createKey(t, "hostile-video-bob")

	status, _, raw := call(t, http.MethodPost, "/v1/tasks", key, `{"model":"mock-video","prompt":"w","seconds":60,"duration":1}`)
	if e := decodeError(t, raw); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "duration" {
		t.Fatalf("conflicting durations: %d %s, want 400 naming duration", status, raw)
	}
	time.Sleep(200 * time.Millisecond)
	if recs := ledgerOf(t, "hostile-video"); len(recs) != 0 {
		t.Fatalf("a refused create left %d ledger records", len(recs))
	}
	if _, _, raw := call(t, http.MethodGet, "/v1/tasks", key, ""); gjson.GetBytes(raw, "data.#").Int() != 0 {
		t.Fatalf("a refused create left a task: %s", raw)
	}

	// "duration" alone: the provider makes, and the gateway bills, 8 s.
	status, task, raw := createTask(t, key, `{"model":"mock-video","prompt":"w","duration":8}`)
	if status != http.StatusAccepted {
		t.Fatalf("duration alone: %d %s", status, raw)
	}
	eventually(t, 30*time.Second, "the video succeeds", func() bool {
		_, v, _ := getTask(t, key, task.ID)
		return v.Status == "succeeded"
	})
	recs := waitLedger(t, "hostile-video", 1)
	if !sameDecimal(recs[0].Cost, "0.8") {
		t.Fatalf("billed %+v, want 8 s at 0.1", recs[0])
	}
	// Another tenant's video, with seconds, is made and billed as asked.
	status, task, raw = createTask(t, other, `{"model":"mock-video","prompt":"w","seconds":"4"}`)
	if status != http.StatusAccepted {
		t.Fatalf("another tenant: %d %s", status, raw)
	}
	eventually(t, 30*time.Second, "the other video succeeds", func() bool {
		_, v, _ := getTask(t, other, task.ID)
		return v.Status == "succeeded"
	})
	if recs := waitLedger(t, "hostile-video-bob", 1); !sameDecimal(recs[0].Cost, "0.4") {
		t.Fatalf("another tenant billed %+v, want 0.4", recs[0])
	}
}

// lastPost returns the body of the last POST the upstream received.
func lastPost(u *upstream) []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	for i := len(u.bodies) - 1; i >= 0; i-- {
		if u.paths[i] == "/v1/images/generations" {
			return u.bodies[i]
		}
	}
	return nil
}

// tinyPNG is a valid 2×2 PNG.
func tinyPNG(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestImagesPassThrough: /v1/images/generations on an OpenAI provider
// sends the client's body with only the model alias changed (no size the
// client did not send, response_format kept), and answers the provider's
// answer with every member it sent (revised_prompt, usage, size, quality,
// output_format), only data[].url re-hosted. Each image is billed once at
// the per-image price, as the provider made it (its default n of 1).
func TestImagesPassThrough(t *testing.T) {
	pic := tinyPNG(t)
	var up *upstream
	up = newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.Method == http.MethodGet {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pic)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		item := `{"b64_json":"` + base64.StdEncoding.EncodeToString(pic) + `","revised_prompt":"a fox, revised"}`
		if gjson.GetBytes(body, "response_format").Str == "url" {
			item = `{"url":"` + up.URL + `/v1/files/fox.png","revised_prompt":"a fox, revised"}`
		}
		_, _ = io.WriteString(w, `{"created":1700000000,"background":"opaque","data":[`+item+`],"output_format":"png","quality":"high","size":"1024x1536",`+
			`"usage":{"input_tokens":9,"input_tokens_details":{"image_tokens":0,"text_tokens":9},"output_tokens":6240,"total_tokens":6249}}`)
	})
	startGateway(t, gatewayOptions{
		Providers: providerBlock("pix", "openai", "", up),
		Models:    "model pt-image pix up-image {\n\t\t\tkind image\n\t\t}",
		Prices:    `{"currency":"USD","models":{"pt-image":{"image":"0.04"}}}`,
	})
	key, _ := createKey(t, "passthrough-painter")
	other, _ := createKey(t, "passthrough-bob")

	for i, tc := range []struct {
		body      string
		wantField string // the data[0] member holding the image
	}{
		{`{"model":"pt-image","prompt":"a fox","quality":"high","response_format":"b64_json","output_format":"png"}`, "b64_json"},
		{`{"prompt":"a fox","response_format":"url","model":"pt-image","size":"auto","style":{"k": [1, 2.50]}}`, "url"},
	} {
		status, _, raw := call(t, http.MethodPost, "/v1/images/generations", key, tc.body)
		if status != http.StatusOK {
			t.Fatalf("Test %d: %d %s", i, status, raw)
		}
		want := strings.Replace(tc.body, `"pt-image"`, `"up-image"`, 1)
		if got := string(lastPost(up)); got != want {
			t.Fatalf("Test %d: the provider got\n%s\nwant the client's body with the model alias\n%s", i, got, want)
		}
		ans := gjson.ParseBytes(raw)
		for path, want := range map[string]string{
			"created": "1700000000", "background": `"opaque"`, "output_format": `"png"`, "quality": `"high"`, "size": `"1024x1536"`,
			"usage.output_tokens": "6240", "usage.input_tokens_details.text_tokens": "9", "data.0.revised_prompt": `"a fox, revised"`,
		} {
			if got := ans.Get(path).Raw; got != want {
				t.Errorf("Test %d: %s = %s, want the provider's %s", i, path, got, want)
			}
		}
		img := ans.Get("data.0." + tc.wantField).Str
		if tc.wantField == "url" {
			if !strings.HasPrefix(img, baseURL+"/media/") {
				t.Fatalf("Test %d: url %q not re-hosted", i, img)
			}
			if status, _, data := fetchMedia(t, img); status != http.StatusOK || !bytes.Equal(data, pic) {
				t.Fatalf("Test %d: re-hosted image: %d", i, status)
			}
		} else if data, err := base64.StdEncoding.DecodeString(img); err != nil || !bytes.Equal(data, pic) {
			t.Fatalf("Test %d: b64_json is not the provider's image: %v", i, err)
		}
	}
	for _, r := range waitLedger(t, "passthrough-painter", 2) {
		if r.Images != 1 || !sameDecimal(r.Cost, "0.04") {
			t.Fatalf("record %+v, want one image at 0.04", r)
		}
	}
	// Another tenant is served the same way.
	if status, _, raw := call(t, http.MethodPost, "/v1/images/generations", other, `{"model":"pt-image","prompt":"a cat"}`); status != http.StatusOK ||
		gjson.GetBytes(raw, "usage.total_tokens").Int() != 6249 {
		t.Fatalf("another tenant: %d %s", status, raw)
	}
	if recs := waitLedger(t, "passthrough-bob", 1); !sameDecimal(recs[0].Cost, "0.04") {
		t.Fatalf("another tenant billed %+v", recs[0])
	}
}
