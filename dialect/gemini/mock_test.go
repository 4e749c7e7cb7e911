package gemini

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
)

const testKey = "AIzaSy-test-key"

// Exchange is one call of the fake: the events of a stream, or the
// response of a plain call, or the error of a failed status.
type exchange struct {
	events []string
	resp   *dialect.Response
	err    *dialect.Error
}

// send posts r to url with auth and decodes the answer with the codec.
func send(t *testing.T, c *http.Client, url string, auth func(http.Header), r *dialect.Request) exchange {
	t.Helper()
	body, err := Codec{}.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	auth(req.Header)
	return do(t, c, req, r.Stream)
}

// do sends req and decodes the answer with the codec.
func do(t *testing.T, c *http.Client, req *http.Request, stream bool) exchange {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return exchange{err: Codec{}.DecodeError(resp.StatusCode, resp.Header, b)}
	}
	if !stream {
		b, _ := io.ReadAll(resp.Body)
		out, err := Codec{}.DecodeResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		return exchange{resp: out}
	}
	d := Codec{}.NewStreamDecoder()
	var x exchange
	var ev dialect.Event
	buf := make([]byte, 256)
	for {
		n, err := resp.Body.Read(buf)
		d.Feed(buf[:n])
		for d.Next(&ev) {
			x.events = append(x.events, describe(&ev))
		}
		if err != nil {
			break
		}
	}
	if d.End(&ev) {
		x.events = append(x.events, describe(&ev))
	}
	return x
}

// fakeGemini starts a fake and returns a call function for model.
func fakeGemini(t *testing.T) (*Server, func(r *dialect.Request) exchange) {
	s := &Server{APIKey: testKey}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	e := &Endpoint{BaseURL: ts.URL, APIKey: testKey}
	return s, func(r *dialect.Request) exchange {
		body, err := Codec{}.EncodeRequest(nil, r)
		if err != nil {
			t.Fatal(err)
		}
		req, err := e.NewRequest(context.Background(), "gemini-3-pro-preview", r.Stream, body)
		if err != nil {
			t.Fatal(err)
		}
		return do(t, ts.Client(), req, r.Stream)
	}
}

func userText(s string) []dialect.Message {
	return []dialect.Message{{Role: dialect.RoleUser, Content: []dialect.Block{{Kind: dialect.BlockText, Text: s}}}}
}

// joined joins the deltas of one kind.
func joined(events []string, kind dialect.DeltaKind) string {
	var b strings.Builder
	for _, e := range events {
		var i int
		var q string
		if _, err := fmt.Sscanf(e, "delta %d kind="+fmt.Sprint(kind)+" %q", &i, &q); err == nil {
			b.WriteString(q)
		}
	}
	return b.String()
}

func TestManyStreamsInARow(t *testing.T) {
	s, call := fakeGemini(t)
	for i := range 40 {
		prompt := fmt.Sprintf("Stream %d with \"quotes\", é and\nnewlines", i)
		x := call(&dialect.Request{Stream: true, Messages: userText(prompt)})
		if x.err != nil || joined(x.events, dialect.DeltaText) != "Mock reply to: "+strings.Join(strings.Fields(prompt), " ") {
			t.Fatalf("stream %d: %q %v", i, x.events, x.err)
		}
		// The last chunk's usage and finish reason are not lost.
		if last := x.events[len(x.events)-1]; !strings.HasPrefix(last, "end end_turn usage=true") || strings.Contains(last, "Output:0 ") {
			t.Fatalf("stream %d ended %q", i, last)
		}
	}
	if s.Requests.Load() != 40 {
		t.Errorf("%d requests", s.Requests.Load())
	}
}

func TestAPIKeyIsChecked(t *testing.T) {
	s := &Server{APIKey: testKey}
	ts := httptest.NewServer(s)
	defer ts.Close()
	r := &dialect.Request{Messages: userText("hi")}
	x := send(t, ts.Client(), URL(ts.URL, "gemini-2.5-flash", false), func(h http.Header) { SetAuth(h, "wrong") }, r)
	if x.err == nil || x.err.Status != 401 || x.err.Kind != dialect.ErrAuthentication {
		t.Errorf("a wrong key got %+v", x.err)
	}
	x = send(t, ts.Client(), URL(ts.URL, "gemini-2.5-flash", false), func(http.Header) {}, r)
	if x.err == nil || x.err.Status != 403 || x.err.Kind != dialect.ErrPermission {
		t.Errorf("no key got %+v", x.err)
	}
	if s.Requests.Load() != 0 {
		t.Errorf("%d requests were let in", s.Requests.Load())
	}
}

func TestFailuresEndToEnd(t *testing.T) {
	_, call := fakeGemini(t)
	for i, tc := range []struct{ prompt, last string }{
		{"mock:cut-event", "error 502 stream_cut gemini stream ended inside an event"},
		{"mock:cut", "error 502 stream_cut gemini stream ended before its last chunk"},
		{"mock:error", "error 503 overloaded The model is overloaded."},
	} {
		x := call(&dialect.Request{Stream: true, Messages: userText("a longer prompt " + tc.prompt)})
		if x.err != nil || len(x.events) == 0 || x.events[len(x.events)-1] != tc.last {
			t.Errorf("Test %d: %q %v, want the last %q", i, x.events, x.err, tc.last)
		}
	}
	for i, tc := range []struct {
		prompt string
		status int
		kind   dialect.ErrorKind
	}{{"mock:throttle", 429, dialect.ErrRateLimit}, {"mock:500", 502, dialect.ErrServer}, {"mock:503", 503, dialect.ErrOverloaded}} {
		for _, stream := range []bool{false, true} {
			x := call(&dialect.Request{Stream: stream, Messages: userText(tc.prompt)})
			if x.err == nil || x.err.Status != tc.status || x.err.Kind != tc.kind {
				t.Errorf("Test %d: %+v", i, x.err)
			}
			if tc.kind == dialect.ErrRateLimit && x.err.RetryAfter.Seconds() != 17 {
				t.Errorf("retry after %v, want the RetryInfo's 17s", x.err.RetryAfter)
			}
		}
	}
}

// TestToolCallsWithThoughtSignatures runs Gemini 3's tool loop: the calls
// get ids, their signature goes back with them, and the result is matched
// by name. A turn whose call lost its signature is refused, as Gemini 3
// refuses it.
func TestToolCallsWithThoughtSignatures(t *testing.T) {
	_, call := fakeGemini(t)
	tools := []dialect.Tool{{Name: "weather"}, {Name: "clock"}}
	think := &dialect.Reasoning{BudgetTokens: 512}
	prompt := "Weather and time? mock:parallel"
	x := call(&dialect.Request{Messages: userText(prompt), Tools: tools, Reasoning: think})
	if x.err != nil {
		t.Fatal(x.err)
	}
	r := x.resp
	if r.StopReason != dialect.StopToolUse || len(r.Content) != 3 || r.Content[0].Kind != dialect.BlockThinking ||
		r.Content[1].Signature == "" || r.Content[1].ToolID == r.Content[2].ToolID || r.Content[1].ToolID == "" {
		t.Fatalf("first turn: %+v", r)
	}
	if r.Usage.Reasoning == 0 || r.Usage.Output <= r.Usage.Reasoning {
		t.Errorf("thoughts not billed as output: %+v", r.Usage)
	}
	// The same turn streamed has the same ids, names and signature.
	s := call(&dialect.Request{Stream: true, Messages: userText(prompt), Tools: tools, Reasoning: think})
	wantStart := fmt.Sprintf("block 1 kind=%d id=%s name=weather sig=%s", dialect.BlockToolUse, r.Content[1].ToolID, r.Content[1].Signature)
	if !strings.Contains(strings.Join(s.events, "\n"), wantStart) {
		t.Errorf("stream %q lacks %q", s.events, wantStart)
	}
	for i, tc := range []struct {
		keepSig, keepID bool
		ok              bool
	}{
		{true, true, true},
		// Chat Completions' tool_calls have no signature: the id carries it.
		{false, true, true},
		// Lost both ways: Gemini 3 refuses the turn.
		{false, false, false},
	} {
		turn := append([]dialect.Block(nil), r.Content...)
		if !tc.keepSig {
			turn[1].Signature = ""
		}
		if !tc.keepID {
			turn[1].ToolID = "call_plain_0"
		}
		msgs := append(userText(prompt), dialect.Message{Role: dialect.RoleAssistant, Content: turn},
			dialect.Message{Role: dialect.RoleUser, Content: []dialect.Block{
				{Kind: dialect.BlockToolResult, ToolID: turn[2].ToolID, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "12:00"}}},
				{Kind: dialect.BlockToolResult, ToolID: turn[1].ToolID, Content: []dialect.Block{{Kind: dialect.BlockText, Text: "sunny"}}},
			}})
		x := call(&dialect.Request{Messages: msgs, Tools: tools, Reasoning: think})
		if tc.ok && (x.err != nil || x.resp.Content[len(x.resp.Content)-1].Text != `Tool result: {"content":"12:00"}{"content":"sunny"}`) {
			t.Errorf("Test %d: %+v %v", i, x.resp, x.err)
		}
		if !tc.ok && (x.err == nil || x.err.Status != 400) {
			t.Errorf("Test %d: a call without its signature was accepted: %+v", i, x.resp)
		}
	}
}

func TestImplicitCacheUsage(t *testing.T) {
	_, call := fakeGemini(t)
	sys := []dialect.Block{{Kind: dialect.BlockText, Text: strings.Repeat("Answer in French. ", 30)}}
	var totals []int64
	for turn, stream := range []bool{false, true, false} {
		x := call(&dialect.Request{System: sys, Messages: userText("Bonjour"), Stream: stream})
		if x.err != nil {
			t.Fatal(x.err)
		}
		if stream {
			if last := x.events[len(x.events)-1]; !strings.Contains(last, "CacheRead:141") {
				t.Errorf("stream: %q", last)
			}
			continue
		}
		u := x.resp.Usage
		if turn == 0 && u.CacheRead != 0 || turn == 2 && u.CacheRead != 141 {
			t.Errorf("turn %d: %+v", turn, u)
		}
		totals = append(totals, u.PromptTotal())
	}
	if totals[0] != totals[1] {
		t.Errorf("the prompt total changed with the cache: %v", totals)
	}
}

// TestUsageChunkEndToEnd asks the fake for a stream whose whole usage
// comes after the finish reason: the stream ends with the same usage,
// thoughts included, as the non-streamed answer reports.
func TestUsageChunkEndToEnd(t *testing.T) {
	_, call := fakeGemini(t)
	for _, think := range []*dialect.Reasoning{nil, {BudgetTokens: 512}} {
		r := &dialect.Request{Messages: userText("Split my usage mock:usage-chunk"), Reasoning: think}
		whole := call(r)
		r.Stream = true
		s := call(r)
		if whole.err != nil || s.err != nil {
			t.Fatal(whole.err, s.err)
		}
		u := whole.resp.Usage
		want := fmt.Sprintf("end end_turn usage=true {Input:%d CacheCreation:0 CacheCreation1h:0 CacheRead:0 Output:%d Reasoning:%d}", u.Input, u.Output, u.Reasoning)
		if last := s.events[len(s.events)-1]; last != want || u.Output == 0 || (think != nil) != (u.Reasoning > 0) {
			t.Errorf("thinking %v: stream ended %q, want %q", think != nil, last, want)
		}
		if joined(s.events, dialect.DeltaText) != whole.resp.Content[len(whole.resp.Content)-1].Text {
			t.Errorf("thinking %v: text %q", think != nil, joined(s.events, dialect.DeltaText))
		}
	}
}
