package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/tidwall/gjson"
)

// The hostile-upstream corpus: a provider that answers with usage in
// repeated or conflicting fields, and with error bodies, headers and
// events that name the operator's account and keys. Each case asserts
// what the client sees, the status, and the bill.
//
// The gateway's rules: repeated usage is billed the largest value of each
// count across the copies (never the smaller one, never 0), and a stream
// that reports usage twice its larger report; a provider's error reaches
// the client rebuilt in its protocol's shape, with its status, type,
// code, param and message, scrubbed of organization and project ids and
// keys, and nothing else of the body.

// hostileSecrets are what no client may see.
var hostileSecrets = []string{"org-Hh1Jj2Kk3Ll4", "proj_Mm5Nn6Pp7Qq8", "sk-proj-RrSsTtUu99", "hostile-upstream-key", "debug_trace"}

// hostileAnswers are the provider's answers, by the model asked for.
var hostileAnswers = map[string]func(w http.ResponseWriter){
	// Two usage objects: a first-wins reader bills 10/5, a last-wins
	// client sees 1000/500.
	"h-dup-usage": jsonAnswer(200, `{"id":"c1","object":"chat.completion","model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15},"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`),
	// The larger copy first: a last-wins reader would bill the smaller.
	"h-dup-usage-rev": jsonAnswer(200, `{"id":"c2","object":"chat.completion","model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":500},"usage":{"prompt_tokens":10,"completion_tokens":5}}`),
	// One count twice in one usage object.
	"h-dup-count": jsonAnswer(200, `{"id":"c3","object":"chat.completion","model":"x","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":5,"completion_tokens":500}}`),
	// A stream whose usage chunk repeats usage, then a smaller report.
	"h-dup-stream": func(w http.ResponseWriter) {
		sseWrite(w,
			"data: {\"id\":\"c4\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}],\"usage\":null}\n\n",
			"data: {\"id\":\"c4\",\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1},\"usage\":{\"prompt_tokens\":1000,\"completion_tokens\":500}}\n\n",
			"data: {\"id\":\"c4\",\"choices\":[],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}\n\n",
			"data: [DONE]\n\n")
	},
	// OpenAI's "project does not have access to model", with ids and a
	// debugging member.
	"h-403": func(w http.ResponseWriter) {
		w.Header().Set("Openai-Organization", "org-Hh1Jj2Kk3Ll4")
		w.Header().Set("X-Request-Id", "req_h403")
		jsonAnswer(403, `{"error":{"message":"Project proj_Mm5Nn6Pp7Qq8 in organization org-Hh1Jj2Kk3Ll4 does not have access to model gpt-5","type":"invalid_request_error","param":null,"code":"model_not_found","debug_trace":"key sk-proj-RrSsTtUu99"}}`)(w)
	},
	"h-429": func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", "7")
		jsonAnswer(429, `{"error":{"message":"Rate limit reached for gpt-4o in organization org-Hh1Jj2Kk3Ll4 on tokens per min (TPM): Limit 30000, Used 29000.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`)(w)
	},
	"h-502-html": func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		_, _ = io.WriteString(w, "<html><body>bad gateway for https://hostile-upstream-key@10.1.2.3/ debug_trace</body></html>")
	},
	"h-stream-error": func(w http.ResponseWriter) {
		sseWrite(w,
			"data: {\"id\":\"c5\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
			"data: {\"error\":{\"message\":\"quota of org-Hh1Jj2Kk3Ll4 exhausted\",\"type\":\"server_error\",\"debug_trace\":\"x\"}}\n\n")
	},
	"h-embed-400": jsonAnswer(400, `{"error":{"message":"input too long for proj_Mm5Nn6Pp7Qq8","type":"invalid_request_error","param":"input","code":null}}`),
	"h-image-400": jsonAnswer(400, `{"error":{"message":"billing hard limit of org-Hh1Jj2Kk3Ll4 reached","type":"invalid_request_error","param":null,"code":"billing_hard_limit_reached"}}`),
	// Anthropic: output_tokens twice in message_delta, and an error
	// event with a key.
	"ha-dup-delta": func(w http.ResponseWriter) {
		sseWrite(w,
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"x\",\"content\":[],\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":500,\"output_tokens\":5}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	},
	"ha-500": jsonAnswer(500, `{"type":"error","error":{"type":"api_error","message":"internal error for key sk-ant-api03-VvWwXxYy hostile-upstream-key"},"request_id":"req_ha500","debug_trace":"x"}`),
}

// jsonAnswer answers status with a JSON body.
func jsonAnswer(status int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestHostileUpstream(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		model := gjson.GetBytes(body, "model").Str
		if a, ok := hostileAnswers[model]; ok {
			a(w)
			return
		}
		jsonAnswer(404, `{"error":{"message":"no such model","type":"invalid_request_error"}}`)(w)
	})
	var models, prices []string
	for m := range hostileAnswers {
		provider, kind := "hostile", ""
		switch {
		case strings.HasPrefix(m, "ha-"):
			provider = "hostile-anthropic"
		case strings.Contains(m, "embed"):
			kind = " {\n\t\t\tkind embedding\n\t\t}"
		case strings.Contains(m, "image"):
			kind = " {\n\t\t\tkind image\n\t\t}"
		}
		models = append(models, fmt.Sprintf("model %s %s%s", m, provider, kind))
		prices = append(prices, fmt.Sprintf(`%q:{"tiers":[{"input":"1.00","output":"2.00"}],"image":"0.04"}`, m))
	}
	block := func(name, proto string) string {
		return fmt.Sprintf("provider %s {\n\t\t\tprotocol %s\n\t\t\tbase_url %s/v1\n\t\t\tapi_key hostile-upstream-key\n\t\t\tretries 0\n\t\t}", name, proto, up.URL)
	}
	startGateway(t, gatewayOptions{
		Providers: block("hostile", "openai") + "\n\t\t" + block("hostile-anthropic", "anthropic"),
		Models:    strings.Join(models, "\n\t\t"),
		Prices:    `{"currency":"USD","models":{` + strings.Join(prices, ",") + `}}`,
	})
	chat := func(model string, stream bool) string {
		if stream {
			return fmt.Sprintf(`{"model":%q,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, model)
		}
		return fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi"}]}`, model)
	}
	anth := func(model string) string {
		return fmt.Sprintf(`{"model":%q,"max_tokens":16,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, model)
	}

	// An image task the provider refuses: the task's error is scrubbed.
	ikey, _ := createKey(t, "hostile-image")
	istatus, _, ibody := call(t, http.MethodPost, "/v1/tasks", ikey, `{"model":"h-image-400","prompt":"a fox"}`)
	e := gjson.GetBytes(ibody, "error").Str
	if e == "" {
		e = gjson.GetBytes(ibody, "error.message").Str
	}
	if !strings.Contains(e, "billing hard limit of [redacted] reached") || strings.Contains(string(ibody), "org-") {
		t.Errorf("image task refused upstream: %d %s, want its error scrubbed", istatus, ibody)
	}
	for i, tc := range []struct {
		name, path, body string
		status           int
		// client are gjson paths of the client's body and their values
		// ("" for a stream, checked by contains).
		client   map[string]string
		contains []string
		// in, out are the billed tokens; cost the bill ("" when the
		// exchange has no price: an error).
		in, out int64
		cost    string
		header  map[string]string
	}{
		{name: "two usage objects", path: "/v1/chat/completions", body: chat("h-dup-usage", false), status: 200,
			client: map[string]string{"choices.0.message.content": "hi"}, in: 1000, out: 500, cost: "0.002"},
		{name: "two usage objects, the larger first", path: "/v1/chat/completions", body: chat("h-dup-usage-rev", false), status: 200,
			in: 1000, out: 500, cost: "0.002"},
		{name: "a count twice", path: "/v1/chat/completions", body: chat("h-dup-count", false), status: 200, in: 1000, out: 500, cost: "0.002"},
		{name: "a stream reporting usage repeatedly", path: "/v1/chat/completions", body: chat("h-dup-stream", true), status: 200,
			contains: []string{`"content":"hi"`, "data: [DONE]"}, in: 1000, out: 500, cost: "0.002"},
		{name: "Anthropic output_tokens twice", path: "/v1/messages", body: anth("ha-dup-delta"), status: 200,
			contains: []string{"message_stop"}, in: 1000, out: 500, cost: "0.002"},
		{name: "403 with ids", path: "/v1/chat/completions", body: chat("h-403", false), status: 403,
			client: map[string]string{"error.message": "Project [redacted] in organization [redacted] does not have access to model gpt-5",
				"error.type": "invalid_request_error", "error.code": "model_not_found"},
			header: map[string]string{"Openai-Organization": "", "X-Upstream-Request-Id": "req_h403"}},
		{name: "an HTML 502", path: "/v1/chat/completions", body: chat("h-502-html", false), status: 502,
			client: map[string]string{"error.message": "the upstream provider answered HTTP 502 Bad Gateway", "error.type": "server_error"}},
		{name: "an error event in a stream", path: "/v1/chat/completions", body: chat("h-stream-error", true), status: 200,
			contains: []string{`"content":"hi"`, `"message":"quota of [redacted] exhausted"`}},
		{name: "embeddings 400", path: "/v1/embeddings", body: `{"model":"h-embed-400","input":"x"}`, status: 400,
			client: map[string]string{"error.message": "input too long for [redacted]", "error.param": "input"}},
		{name: "Anthropic 500 with a key", path: "/v1/messages", body: anth("ha-500"), status: 500,
			client: map[string]string{"type": "error", "error.type": "api_error", "error.message": "internal error for key [redacted] [redacted]", "request_id": "req_ha500"}},
		// Last: its Retry-After cools the provider's only upstream.
		{name: "429 with an org id", path: "/v1/chat/completions", body: chat("h-429", false), status: 429,
			client: map[string]string{"error.message": "Rate limit reached for gpt-4o in organization [redacted] on tokens per min (TPM): Limit 30000, Used 29000.",
				"error.code": "rate_limit_exceeded"},
			header: map[string]string{"Retry-After": "7"}},
	} {
		user := fmt.Sprintf("hostile-%d", i)
		key, _ := createKey(t, user)
		status, hdr, body := call(t, http.MethodPost, tc.path, key, tc.body, "anthropic-version", "2023-06-01")
		if status != tc.status {
			t.Errorf("%s: status %d %s, want %d", tc.name, status, body, tc.status)
			continue
		}
		for path, want := range tc.client {
			if got := gjson.GetBytes(body, path).String(); got != want {
				t.Errorf("%s: client's %s = %q, want %q (%s)", tc.name, path, got, want, body)
			}
		}
		for _, s := range tc.contains {
			if !strings.Contains(string(body), s) {
				t.Errorf("%s: the client's answer lacks %q: %s", tc.name, s, body)
			}
		}
		for k, want := range tc.header {
			if got := hdr.Get(k); got != want {
				t.Errorf("%s: header %s = %q, want %q", tc.name, k, got, want)
			}
		}
		for _, s := range append(hostileSecrets, "sk-ant") {
			if strings.Contains(string(body), s) || strings.Contains(fmt.Sprint(hdr), s) {
				t.Errorf("%s: the client saw %q: %v %s", tc.name, s, hdr, body)
			}
		}
		recs := waitLedger(t, user, 1)
		r := recs[0]
		switch {
		case r.Status != tc.status:
			t.Errorf("%s: billed status %d, want %d", tc.name, r.Status, tc.status)
		case tc.cost != "":
			got, err := decimal.NewFromString(r.Cost)
			if r.Usage.Input != tc.in || r.Usage.Output != tc.out || err != nil || !got.Equal(decimal.RequireFromString(tc.cost)) || r.Source != "reported" {
				t.Errorf("%s: billed %d in / %d out, %s (%s); want %d / %d, %s reported", tc.name, r.Usage.Input, r.Usage.Output, r.Cost, r.Source, tc.in, tc.out, tc.cost)
			}
		case tc.status >= 400:
			// An error status: the provider charged nothing, no usage.
			if r.Outcome != "upstream_error" || r.Usage.Input != 0 || r.Usage.Output != 0 {
				t.Errorf("%s: outcome %q, %d in / %d out; want upstream_error without usage", tc.name, r.Outcome, r.Usage.Input, r.Usage.Output)
			}
		default:
			// An error event after text: billed on its estimate, never 0.
			if r.Outcome != "upstream_error" || r.Usage.Input == 0 || r.Usage.Output == 0 {
				t.Errorf("%s: outcome %q, %d in / %d out; want upstream_error billed on an estimate", tc.name, r.Outcome, r.Usage.Input, r.Usage.Output)
			}
		}
	}
}
