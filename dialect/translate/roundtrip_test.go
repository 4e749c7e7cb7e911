package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/dialect"
	"github.com/caddy-air/caddy-air/dialect/anthropic"
	"github.com/caddy-air/caddy-air/dialect/openai"
)

// meaning is what a round trip must keep of a conversation: each
// message's role and, per block, its kind, text, tool id, name and
// arguments (compacted), and a tool result's text.
func meaning(t *testing.T, r *dialect.Request) []string {
	t.Helper()
	var out []string
	for _, s := range r.System {
		out = append(out, "system:"+s.Text)
	}
	for _, m := range r.Messages {
		for _, b := range m.Content {
			switch b.Kind {
			case dialect.BlockText:
				out = append(out, fmt.Sprintf("%s:text:%s", m.Role, b.Text))
			case dialect.BlockToolUse:
				var c bytes.Buffer
				if err := json.Compact(&c, b.Input); err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%s:tool_use:%s:%s:%s", m.Role, b.ToolID, b.ToolName, c.String()))
			case dialect.BlockToolResult:
				text := ""
				for _, c := range b.Content {
					text += c.Text
				}
				out = append(out, fmt.Sprintf("%s:tool_result:%s:%s", m.Role, b.ToolID, text))
			case dialect.BlockImage:
				out = append(out, fmt.Sprintf("%s:image:%s:%s%s", m.Role, b.Image.MediaType, b.Image.Data, b.Image.URL))
			case dialect.BlockThinking:
				out = append(out, fmt.Sprintf("%s:thinking:%s:%s", m.Role, b.Text, b.Signature))
			}
		}
	}
	for _, tl := range r.Tools {
		out = append(out, "tool:"+tl.Name)
	}
	return out
}

// withoutThinking removes the thinking blocks from a meaning.
func withoutThinking(m []string) []string {
	var out []string
	for _, s := range m {
		if !strings.HasPrefix(s, "assistant:thinking:") {
			out = append(out, s)
		}
	}
	return out
}

// through encodes r for one protocol and decodes it back.
func through(t *testing.T, r *dialect.Request, p dialect.ProviderCodec, c dialect.ClientCodec) *dialect.Request {
	t.Helper()
	b, err := p.EncodeRequest(nil, r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.DecodeRequest(b)
	if err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return out
}

// TestRoundTripRequests: Chat → Messages → Chat and Messages → Chat →
// Messages keep roles, text, tool ids and arguments, and tool results.
func TestRoundTripRequests(t *testing.T) {
	oa, an := openai.Codec{}, anthropic.Codec{}
	chat := []string{
		`{"model":"m","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"Hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},{"role":"user","content":[{"type":"text","text":"See"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`,
		`{"model":"m","tools":[{"type":"function","function":{"name":"w","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"Weather?"},
		  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"w","arguments":"{\"city\": \"Oslo\"}"}},{"id":"call_2","type":"function","function":{"name":"w","arguments":"{\"city\":\"Rome\"}"}}]},
		  {"role":"tool","tool_call_id":"call_1","content":"rain"},{"role":"tool","tool_call_id":"call_2","content":"sun"},{"role":"user","content":"Thanks"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"Think"},{"role":"assistant","content":"42","thinking_blocks":[{"type":"thinking","thinking":"hmm","signature":"sig"}]},{"role":"user","content":"Why?"}]}`,
	}
	for i, body := range chat {
		first, err := oa.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		mid := through(t, first, an, an)
		if want, got := meaning(t, first), meaning(t, mid); !reflect.DeepEqual(want, got) {
			t.Errorf("Test %d: Chat → Messages\n got %q\nwant %q", i, got, want)
		}
		// Chat Completions takes no reasoning as input: the way back
		// leaves it out (and says so in X-Air-Dropped-Params).
		back := through(t, mid, oa, oa)
		if want, got := withoutThinking(meaning(t, first)), meaning(t, back); !reflect.DeepEqual(want, got) {
			t.Errorf("Test %d: Chat → Messages → Chat\n got %q\nwant %q", i, got, want)
		}
	}
	messages := []string{
		`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"Be terse."}],"messages":[{"role":"user","content":"Hi"}]}`,
		`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"See"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
		`{"model":"m","max_tokens":9,"tools":[{"name":"w","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"Weather?"},
		  {"role":"assistant","content":[{"type":"text","text":"Let me check."},{"type":"tool_use","id":"toolu_1","name":"w","input":{"city":"Oslo"}},{"type":"tool_use","id":"toolu_2","name":"w","input":{"city":"Rome"}}]},
		  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"rain"},{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"sun"}]},{"type":"text","text":"Thanks"}]}]}`,
	}
	for i, body := range messages {
		first, err := an.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		back := through(t, through(t, first, oa, oa), an, an)
		if want, got := meaning(t, first), meaning(t, back); !reflect.DeepEqual(want, got) {
			t.Errorf("Test %d: Messages → Chat → Messages\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestRoundTripResponses: an answer translated to the other protocol and
// back keeps its blocks, tool ids and arguments, stop reason and usage.
func TestRoundTripResponses(t *testing.T) {
	oa, an := openai.Codec{}, anthropic.Codec{}
	for i, body := range []string{
		`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hello"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"cache_read_input_tokens":30,"cache_creation_input_tokens":5,"output_tokens":7}}`,
		`{"id":"msg_2","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Checking"},{"type":"tool_use","id":"toolu_9","name":"w","input":{"city":"Oslo"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}`,
		`{"id":"msg_3","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":4}}`,
	} {
		first, err := an.DecodeResponse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := oa.EncodeResponse(nil, first)
		mid, err := oa.DecodeResponse(b)
		if err != nil {
			t.Fatalf("Test %d: %v in %s", i, err, b)
		}
		b, _ = an.EncodeResponse(nil, mid)
		back, err := an.DecodeResponse(b)
		if err != nil {
			t.Fatalf("Test %d: %v in %s", i, err, b)
		}
		wantM := meaning(t, &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleAssistant, Content: first.Content}}})
		gotM := meaning(t, &dialect.Request{Messages: []dialect.Message{{Role: dialect.RoleAssistant, Content: back.Content}}})
		if !reflect.DeepEqual(wantM, gotM) || back.StopReason != first.StopReason || back.Usage != first.Usage || back.ID != first.ID {
			t.Errorf("Test %d: Messages → Chat → Messages\n got %q %s %+v\nwant %q %s %+v", i, gotM, back.StopReason, back.Usage, wantM, first.StopReason, first.Usage)
		}
	}
}
