package chatproxy

import (
	"context"
	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/responses"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/providers"
)

// respEvent builds one Responses stream event.
func respEvent(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

const respCompletedUsage = `{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":192},"total_tokens":2306}`

var respStream = []string{
	respEvent("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","output":[],"usage":null}}`),
	respEvent("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"gpt-5","usage":null}}`),
	respEvent("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}`),
	respEvent("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" world!!"}`),
	respEvent("response.completed", `{"type":"response.completed","sequence_number":4,"response":{"id":"resp_1","object":"response","status":"completed","model":"gpt-5","usage":`+respCompletedUsage+`}}`),
}

func TestInspectResponses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		errParam   string
		want       dialect.Inspected
	}{
		{name: "string input", body: `{"model":"gpt-5","input":"abcdefgh","stream":true}`,
			want: dialect.Inspected{Model: "gpt-5", Stream: true, PromptBytes: 8}},
		{name: "items, instructions, background, previous id",
			body: `{"model":"m","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"background":true,"previous_response_id":"resp_9","max_output_tokens":50}`,
			want: dialect.Inspected{Model: "m", Background: true, PreviousResponseID: "resp_9", MaxTokens: 50, PromptBytes: 8 + dialect.MessageOverhead + 2}},
		{name: "previous id stands for input", body: `{"model":"m","previous_response_id":"resp_9"}`,
			want: dialect.Inspected{Model: "m", PreviousResponseID: "resp_9"}},
		{name: "no input", body: `{"model":"m"}`, errParam: "input"},
		{name: "no model", body: `{"input":"x"}`, errParam: "model"},
		{name: "repeated model", body: `{"model":"a","input":"x","model":"b"}`, errParam: "model"},
		{name: "stream not boolean", body: `{"model":"a","input":"x","stream":"yes"}`, errParam: "stream"},
		{name: "background not boolean", body: `{"model":"a","input":"x","background":1}`, errParam: "background"},
		{name: "previous id not a string", body: `{"model":"a","previous_response_id":3}`, errParam: "previous_response_id"},
		{name: "max_output_tokens zero", body: `{"model":"a","input":"x","max_output_tokens":0}`, errParam: "max_output_tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, e := responses.InspectResponses([]byte(tc.body), 0)
			if tc.errParam != "" {
				if e == nil || e.Param == nil || *e.Param != tc.errParam {
					t.Fatalf("error %+v, want one on %s", e, tc.errParam)
				}
				return
			}
			if e != nil {
				t.Fatal(e.Message)
			}
			in.Located = dialect.Located{}
			if in != tc.want {
				t.Errorf("got %+v, want %+v", in, tc.want)
			}
		})
	}
}

// responsesCall prepares a create request as the handler does.
func responsesCall(t *testing.T, prov *providers.Provider, body, upstreamModel string) *Call {
	t.Helper()
	in, e := responses.InspectResponses([]byte(body), 0)
	if e != nil {
		t.Fatal(e.Message)
	}
	out, inj, err := dialect.PrepareBody(responses.Wire, []byte(body), in, upstreamModel)
	if err != nil || inj {
		t.Fatalf("prepare: %v, injected %v", err, inj)
	}
	return &Call{Wire: responses.Wire, Provider: prov, Path: "/responses", Body: out, Inspected: in, ClientHeader: http.Header{}, RequestID: "req-1"}
}

func TestServeResponsesStream(t *testing.T) {
	up := newUpstream(t, sseAnswer(respStream))
	body := `{"model":"alias","input":"hello","stream":true}`
	c := responsesCall(t, provider("openai", 0, up.URL+"/v1"), body, "gpt-5")
	rec := httptest.NewRecorder()
	res := (&Proxy{}).Serve(rec, clientRequest(context.Background(), body), c)
	defer res.Close()
	if got, want := string(up.bodies[0]), `{"model":"gpt-5","input":"hello","stream":true}`; got != want || up.paths[0] != "/v1/responses" {
		t.Errorf("upstream got %s %s, want the model alias as the only edit", up.paths[0], got)
	}
	all := strings.Join(respStream, "")
	last := respStream[len(respStream)-1]
	if rec.Body.String() != strings.TrimSuffix(all, last) {
		t.Errorf("before the record, the client got:\n%s", rec.Body.String())
	}
	res.Held.Release(rec)
	if rec.Body.String() != all {
		t.Errorf("the client got:\n%s", rec.Body.String())
	}
	want := billing.Usage{Input: 86, CacheRead: 1920, Output: 300, Reasoning: 192}
	if res.Usage != want || res.Source != billing.SourceReported || res.Outcome != OutcomeOK ||
		res.ResponseID != "resp_1" || res.ResponseStatus != "completed" || res.Attempt.BaseURL != up.URL+"/v1" {
		t.Errorf("result %+v", res)
	}
}

func TestServeResponsesGetPinned(t *testing.T) {
	const obj = `{"id":"resp_1","object":"response","status":"completed","usage":{"input_tokens":10,"output_tokens":4}}`
	up := newUpstream(t, answer(200, "application/json", obj))
	other := newUpstream(t, answer(500, "application/json", `{}`))
	prov := provider("openai", 0, other.URL, up.URL)
	pin := []providers.Attempt{{BaseURL: up.URL, APIKey: "sk-up-b"}}
	r := httptest.NewRequest(http.MethodGet, "/v1/responses/resp_1", nil)
	rec := httptest.NewRecorder()
	res := serveAll(&Proxy{}, rec, r, &Call{Wire: responses.Wire, Provider: prov, Path: "/responses/resp_1", Method: http.MethodGet,
		Attempts: pin, ClientHeader: http.Header{}})
	if other.count() != 0 || up.count() != 1 || up.headers[0].Get("Authorization") != "Bearer sk-up-b" || up.headers[0].Get("Content-Type") != "" {
		t.Fatalf("the pinned deployment was not the only one asked: %d %d %v", other.count(), up.count(), up.headers)
	}
	if rec.Body.String() != obj || res.ResponseStatus != "completed" || res.Usage != (billing.Usage{Input: 10, Output: 4}) {
		t.Errorf("got %q, result %+v", rec.Body.String(), res)
	}
}
