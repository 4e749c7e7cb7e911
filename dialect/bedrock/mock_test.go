package bedrock

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/dialect"
)

const (
	testRegion = "eu-west-3"
	testKeyID  = "AKIDEXAMPLE"
	testSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testModel  = "anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// fake starts a fake Bedrock and a signer for it.
func fake(t *testing.T, secret string) (*Server, *httptest.Server, *Signer) {
	t.Helper()
	s := &Server{Region: testRegion, AccessKeyID: testKeyID, SecretKey: testSecret}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	sg, err := NewSigner(testRegion, StaticCredentials(testKeyID, secret, ""))
	if err != nil {
		t.Fatal(err)
	}
	return s, ts, sg
}

// call sends r to the fake as the gateway would: encoded, signed and
// sent on the caller's client. It returns the events of a stream (or the
// response of a plain call) and the error of a failed status.
func call(t *testing.T, c *http.Client, base string, sg *Signer, r *dialect.Request) ([]string, *dialect.Response, *dialect.Error) {
	t.Helper()
	body, err := Codec{}.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	e := &Endpoint{BaseURL: base, Signer: sg}
	req, err := e.NewRequest(context.Background(), testModel, r.Stream, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, nil, Codec{}.DecodeError(resp.StatusCode, resp.Header, b)
	}
	if !r.Stream {
		b, _ := io.ReadAll(resp.Body)
		out, err := Codec{}.DecodeResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		return nil, out, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != StreamContentType {
		t.Fatalf("stream content type %q", ct)
	}
	d := Codec{}.NewStreamDecoder()
	var events []string
	var ev dialect.Event
	buf := make([]byte, 512)
	for {
		n, err := resp.Body.Read(buf)
		d.Feed(buf[:n])
		for d.Next(&ev) {
			events = append(events, describe(&ev))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			events = append(events, "read error: "+err.Error())
			break
		}
	}
	if d.End(&ev) {
		events = append(events, describe(&ev))
	}
	return events, nil, nil
}

func userText(s string) []dialect.Message {
	return []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: s}}}}
}

// text joins the text deltas of block 0... of events.
func deltas(events []string, kind dialect.DeltaKind, index int) string {
	var b strings.Builder
	prefix := fmt.Sprintf("delta %d kind=%d ", index, kind)
	for _, e := range events {
		if q, ok := strings.CutPrefix(e, prefix); ok {
			var s string
			fmt.Sscanf(q, "%q", &s)
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestManyStreamsInARowOverOneClient(t *testing.T) {
	s, ts, sg := fake(t, testSecret)
	c := ts.Client()
	const n = 60
	for i := range n {
		prompt := fmt.Sprintf("Tell me about stream %d, with \"quotes\" and é", i)
		events, _, e := call(t, c, ts.URL, sg, &dialect.Request{Stream: true, Messages: userText(prompt), MaxTokens: 100})
		if e != nil {
			t.Fatalf("stream %d: %v", i, e)
		}
		if got := deltas(events, dialect.DeltaText, 0); got != "Mock reply to: "+prompt {
			t.Fatalf("stream %d: text %q", i, got)
		}
		if last := events[len(events)-1]; !strings.HasPrefix(last, "end end_turn") || !strings.Contains(last, "usage=true") {
			t.Fatalf("stream %d ended with %q", i, last)
		}
	}
	if got := s.Requests.Load(); got != n {
		t.Errorf("the fake saw %d signed requests, want %d", got, n)
	}
}

func TestStreamFailuresEndToEnd(t *testing.T) {
	_, ts, sg := fake(t, testSecret)
	for i, tc := range []struct{ prompt, last string }{
		{"mock:cut-between", "error 502 stream_cut bedrock stream ended before its last event"},
		{"mock:cut-frame", "error 502 stream_cut bedrock stream ended inside an event"},
		{"mock:exception", "error 429 rate_limit Too many requests, please wait before trying again."},
	} {
		events, _, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Stream: true, Messages: userText(tc.prompt)})
		if e != nil || len(events) == 0 || events[len(events)-1] != tc.last {
			t.Errorf("Test %d: events %q, error %v; want the last %q", i, events, e, tc.last)
		}
	}
	for i, tc := range []struct {
		prompt string
		status int
		kind   dialect.ErrorKind
	}{
		{"mock:throttle", 429, dialect.ErrRateLimit},
		{"mock:500", 502, dialect.ErrServer},
		{"mock:503", 503, dialect.ErrOverloaded},
	} {
		for _, stream := range []bool{false, true} {
			_, _, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Stream: stream, Messages: userText(tc.prompt)})
			if e == nil || e.Status != tc.status || e.Kind != tc.kind {
				t.Errorf("Test %d (stream %v): error %+v, want %d %s", i, stream, e, tc.status, tc.kind)
			}
		}
	}
}

func TestBadSignatureIsRefused(t *testing.T) {
	s, ts, _ := fake(t, testSecret)
	_, _, wrong := fake(t, "not-the-secret")
	_, _, e := call(t, ts.Client(), ts.URL, wrong, &dialect.Request{Messages: userText("hi")})
	if e == nil || e.Status != http.StatusForbidden || e.Kind != dialect.ErrAuthentication || !strings.Contains(e.Message, "signature we calculated does not match") {
		t.Errorf("a wrong secret got %+v, want 403 InvalidSignatureException", e)
	}
	// A body changed after signing fails too: the payload hash is signed.
	body := []byte(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`)
	sg, _ := NewSigner(testRegion, StaticCredentials(testKeyID, testSecret, ""))
	req, _ := http.NewRequest(http.MethodPost, URL(ts.URL, testModel, false), bytes.NewReader(bytes.Replace(body, []byte("hi"), []byte("yo"), 1)))
	if err := sg.Sign(req, body); err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Amzn-Errortype"), "InvalidSignatureException") || gjson.GetBytes(b, "message").Str == "" {
		t.Errorf("a tampered body got %d %q %s", resp.StatusCode, resp.Header.Get("X-Amzn-Errortype"), b)
	}
	// Unsigned and wrong-region requests.
	req, _ = http.NewRequest(http.MethodPost, URL(ts.URL, testModel, false), bytes.NewReader(body))
	resp, _ = ts.Client().Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unsigned request got %d, want 400", resp.StatusCode)
	}
	other, _ := NewSigner("us-east-1", StaticCredentials(testKeyID, testSecret, ""))
	if _, _, e := call(t, ts.Client(), ts.URL, other, &dialect.Request{Messages: userText("hi")}); e == nil || e.Status != http.StatusForbidden {
		t.Errorf("a request signed for another region got %+v, want 403", e)
	}
	if s.Requests.Load() != 0 {
		t.Errorf("the fake counted %d valid requests, want 0", s.Requests.Load())
	}
}

func TestToolUseAcrossTwoTurns(t *testing.T) {
	_, ts, sg := fake(t, testSecret)
	tools := []dialect.Tool{{Name: "weather", Schema: []byte(`{"type":"object"}`)}, {Name: "clock", Schema: []byte(`{"type":"object"}`)}}
	prompt := "Weather and time in Paris? mock:parallel"
	events, _, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Stream: true, Messages: userText(prompt), Tools: tools})
	if e != nil {
		t.Fatal(e)
	}
	// Each call's arguments arrive over many deltas, in order, unmixed.
	want := `{"query":"Weather and time in Paris? mock:parallel"}`
	for i := range 2 {
		if got := deltas(events, dialect.DeltaJSON, i); got != want {
			t.Errorf("call %d arguments %q, want %q", i, got, want)
		}
	}
	if n := strings.Count(strings.Join(events, "\n"), fmt.Sprintf("delta 0 kind=%d", dialect.DeltaJSON)); n < 5 {
		t.Errorf("the arguments came in %d deltas, want many", n)
	}
	var ids []string
	for _, ev := range events {
		if strings.HasPrefix(ev, "block ") {
			ids = append(ids, strings.Fields(ev)[3][3:])
		}
	}
	if len(ids) != 2 || ids[0] == "" || ids[0] == ids[1] {
		t.Fatalf("tool ids %q", ids)
	}
	if last := events[len(events)-1]; !strings.HasPrefix(last, "end tool_use") {
		t.Errorf("ended with %q", last)
	}
	// The result turn carries the ids back; the fake answers from it.
	msgs := append(userText(prompt),
		dialect.Message{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: ids[0], ToolName: "weather", Input: []byte(want)}}},
		dialect.Message{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: ids[0], Content: []dialect.Block{{Kind: dialect.BlockText, Text: "sunny"}}}}})
	_, r, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Messages: msgs, Tools: tools})
	if e != nil || len(r.Content) != 1 || r.Content[0].Text != "Tool result: sunny" || r.StopReason != dialect.StopEnd {
		t.Errorf("result turn: %+v, %v", r, e)
	}
}

func TestReasoningRoundTrip(t *testing.T) {
	_, ts, sg := fake(t, testSecret)
	think := &dialect.Reasoning{BudgetTokens: 2048}
	events, _, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Stream: true, Messages: userText("Think"), Reasoning: think, MaxTokens: 4096})
	if e != nil {
		t.Fatal(e)
	}
	text, sig := deltas(events, dialect.DeltaThinking, 0), deltas(events, dialect.DeltaSignature, 0)
	if text != "Considering: Think" || !strings.HasPrefix(sig, "sig-") {
		t.Fatalf("thinking %q signed %q", text, sig)
	}
	for i, tc := range []struct {
		sig string
		ok  bool
	}{{sig, true}, {"sig-forged", false}} {
		msgs := append(userText("Think"),
			dialect.Message{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockThinking, Text: text, Signature: tc.sig}, {Kind: dialect.BlockText, Text: "Done."}}})
		msgs = append(msgs, userText("Again")...)
		_, r, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Messages: msgs, Reasoning: think})
		if tc.ok && (e != nil || r.Content[0].Kind != dialect.BlockThinking || r.Content[0].Signature == "") {
			t.Errorf("Test %d: the signed thinking block was refused: %+v %v", i, r, e)
		}
		if !tc.ok && (e == nil || e.Status != http.StatusBadRequest) {
			t.Errorf("Test %d: a forged signature was accepted: %v", i, e)
		}
	}
}

func TestCacheUsage(t *testing.T) {
	_, ts, sg := fake(t, testSecret)
	system := []dialect.Block{{Kind: dialect.BlockText, Text: strings.Repeat("You are a careful assistant. ", 40), CacheControl: []byte(`{"type":"ephemeral"}`)}}
	var prev *dialect.Response
	for turn := range 2 {
		for _, stream := range []bool{false, true} {
			r := &dialect.Request{System: system, Messages: userText(fmt.Sprintf("turn %d", turn)), Stream: stream}
			events, resp, e := call(t, ts.Client(), ts.URL, sg, r)
			if e != nil {
				t.Fatal(e)
			}
			if stream {
				last := events[len(events)-1]
				if !strings.Contains(last, "CacheRead:290") {
					t.Errorf("turn %d stream: %q, want the prefix read from the cache", turn, last)
				}
				continue
			}
			u := resp.Usage
			if turn == 0 && (u.CacheCreation != 290 || u.CacheRead != 0) || turn == 1 && (u.CacheRead != 290 || u.CacheCreation != 0) {
				t.Errorf("turn %d: usage %+v", turn, u)
			}
			if prev != nil && u.PromptTotal() != prev.Usage.PromptTotal() {
				t.Errorf("the prompt total changed with caching: %d, then %d", prev.Usage.PromptTotal(), u.PromptTotal())
			}
			if u.Input <= 0 || u.Input >= u.PromptTotal() {
				t.Errorf("turn %d: input %d should exclude the cached %d", turn, u.Input, u.PromptTotal()-u.Input)
			}
			prev = resp
		}
	}
}

func TestDefaultCredentialChain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_ACCESS_KEY_ID", testKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testSecret)
	t.Setenv("AWS_SESSION_TOKEN", "session-token")
	creds, err := DefaultCredentials(context.Background(), testRegion)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := NewSigner(testRegion, creds)
	if err != nil {
		t.Fatal(err)
	}
	s, ts, _ := fake(t, testSecret)
	if _, r, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Messages: userText("hi")}); e != nil || r.Content[0].Text != "Mock reply to: hi" {
		t.Errorf("signed with the default chain: %+v, %v", r, e)
	}
	if s.Requests.Load() != 1 {
		t.Errorf("the fake counted %d valid requests, want 1", s.Requests.Load())
	}
	if _, err := NewSigner("", creds); err == nil {
		t.Error("a signer without a region was made")
	}
}

func TestToolResultsMustMatchCalls(t *testing.T) {
	_, ts, sg := fake(t, testSecret)
	tools := []dialect.Tool{{Name: "weather"}}
	use := dialect.Message{Role: dialect.RoleAssistant, Content: []dialect.Block{{Kind: dialect.BlockToolUse, ToolID: "tooluse_1", ToolName: "weather"}}}
	result := func(id string) dialect.Message {
		return dialect.Message{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockToolResult, ToolID: id, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "ok"}}}}}
	}
	for i, tc := range []struct {
		msgs  []dialect.Message
		tools []dialect.Tool
		ok    bool
	}{
		{append(userText("w?"), use, result("tooluse_1")), tools, true},
		{append(userText("w?"), use, result("tooluse_other")), tools, false},
		{append(userText("w?"), use, result("tooluse_1")), nil, false},
	} {
		_, r, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Messages: tc.msgs, Tools: tc.tools})
		if tc.ok != (e == nil) || !tc.ok && (e.Status != 400 || e.Kind != dialect.ErrInvalidRequest) {
			t.Errorf("Test %d: %+v, %+v", i, r, e)
		}
	}
}

func TestThrottleRetryAfter(t *testing.T) {
	s, ts, sg := fake(t, testSecret)
	s.RetryAfter = 1500 * time.Millisecond
	_, _, e := call(t, ts.Client(), ts.URL, sg, &dialect.Request{Messages: userText("mock:throttle")})
	if e == nil || e.Status != 429 || e.RetryAfter != 2*time.Second {
		t.Errorf("got %+v, want 429 with a 2 s retry", e)
	}
}
