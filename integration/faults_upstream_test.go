package integration

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// requestIDHeader is the header in which the gateway names each upstream
// attempt's request: the id of the request's ledger record.
const requestIDHeader = "X-Air-Request-Id"

// idUpstream is a fake provider (OpenAI chat, JSON and SSE, and Anthropic
// messages, SSE) that records the request id of every attempt and answers
// with it as the completion's or message's id, so that a client knows
// which ledger record its answer must have.
type idUpstream struct {
	*upstream
	mu sync.Mutex
	// seen counts the attempts per request id.
	seen map[string]int
	// missing counts attempts without a request id.
	missing int
}

// idChunks is how many content chunks a streamed answer has; idChunkDelay
// separates them, so that a kill often falls inside a stream.
const (
	idChunks     = 8
	idChunkDelay = 15 * time.Millisecond
)

// newIDUpstream starts the fake provider.
func newIDUpstream(t *testing.T) *idUpstream {
	t.Helper()
	u := &idUpstream{seen: map[string]int{}}
	u.upstream = newUpstream(t, u.answer)
	return u
}

// answer records the request id of one attempt and answers it.
func (u *idUpstream) answer(w http.ResponseWriter, r *http.Request, body []byte) {
	id := r.Header.Get(requestIDHeader)
	u.mu.Lock()
	if id == "" {
		u.missing++
		id = fmt.Sprintf("no-request-id-%d", u.missing)
	} else {
		u.seen[id]++
	}
	u.mu.Unlock()
	var req struct {
		Stream bool `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages"):
		anthropicAnswer(w, r, id)
	case req.Stream:
		openAIStream(w, r, id)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1,"model":"fake-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`, id)
	}
}

// ids returns the request ids seen so far and how many attempts had none.
func (u *idUpstream) ids() (map[string]int, int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make(map[string]int, len(u.seen))
	for id, n := range u.seen {
		out[id] = n
	}
	return out, u.missing
}

// openAIStream streams a chat completion with usage and [DONE].
func openAIStream(w http.ResponseWriter, r *http.Request, id string) {
	chunk := func(delta string) string {
		return fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-gpt\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", id, delta)
	}
	events := []string{chunk(`{"role":"assistant","content":""}`)}
	for range idChunks {
		events = append(events, chunk(`{"content":"word "}`))
	}
	events = append(events,
		fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake-gpt\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", id, idChunks, 12+idChunks),
		"data: [DONE]\n\n")
	slowSSE(w, r, events)
}

// anthropicAnswer streams an Anthropic message ending with message_stop.
func anthropicAnswer(w http.ResponseWriter, r *http.Request, id string) {
	events := []string{
		fmt.Sprintf("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":%q,\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake-claude\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n", id),
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
	}
	for range idChunks {
		events = append(events, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word \"}}\n\n")
	}
	events = append(events,
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
		fmt.Sprintf("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", idChunks),
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	slowSSE(w, r, events)
}

// slowSSE writes events with idChunkDelay between them, until the client
// (the gateway) goes away.
func slowSSE(w http.ResponseWriter, r *http.Request, events []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, e := range events {
		if i > 0 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(idChunkDelay):
			}
		}
		_, _ = io.WriteString(w, e)
		w.(http.Flusher).Flush()
	}
}

// idConfig returns the Caddyfile of a gateway process with the fake
// provider u for the models fake-gpt (chat) and fake-claude (messages),
// beside the quickstart's mock, and extra text for the air block.
func idConfig(t *testing.T, dataDir string, u *idUpstream, extra string) string {
	t.Helper()
	cfg := quickstartConfig(t, dataDir, strings.Join([]string{
		"\t\t" + providerBlock("fake-openai", "openai", "\t\t\tretries 0", u.upstream),
		"\t\t" + providerBlock("fake-anthropic", "anthropic", "\t\t\tretries 0", u.upstream),
		"\t\tmodel fake-gpt fake-openai",
		"\t\tmodel fake-claude fake-anthropic",
		extra,
	}, "\n"))
	// Price the fake models too, so that the ledger's costs are not all 0.
	src, err := os.ReadFile("../prices.example.json")
	if err != nil {
		t.Fatal(err)
	}
	var prices map[string]any
	if err := json.Unmarshal(src, &prices); err != nil {
		t.Fatal(err)
	}
	models := prices["models"].(map[string]any)
	models["fake-gpt"] = models["mock-gpt"]
	models["fake-claude"] = models["mock-claude"]
	out, err := json.Marshal(prices)
	if err != nil {
		t.Fatal(err)
	}
	pricesFile := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(pricesFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(text), "prices prices.example.json", "prices "+pricesFile, 1)
	if changed == string(text) {
		t.Fatal("Caddyfile.example has no `prices prices.example.json` line to replace")
	}
	if err := os.WriteFile(cfg, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// idCall is one kind of request that the kill and disk-full scenarios send.
type idCall struct {
	name, path, body string
}

var idCalls = []idCall{
	{"chat JSON", "/v1/chat/completions", `{"model":"fake-gpt","messages":[{"role":"user","content":"count me"}]}`},
	{"chat SSE", "/v1/chat/completions", `{"model":"fake-gpt","stream":true,"messages":[{"role":"user","content":"count me"}]}`},
	{"messages SSE", "/v1/messages", `{"model":"fake-claude","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"count me"}]}`},
}

// do sends the call to the gateway process with key. It returns the
// status and, when the client received the answer completely (a JSON body
// that parses, a chat stream up to [DONE], a message stream up to
// message_stop), its id. A transport error is returned as err.
func (c idCall) do(ctx context.Context, client *http.Client, url, key string) (status int, id string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+c.path, strings.NewReader(c.body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, err := io.ReadAll(resp.Body)
		var v struct {
			ID    string `json:"id"`
			Error struct {
				Code, Type string
			} `json:"error"`
		}
		jerr := json.Unmarshal(body, &v)
		if resp.StatusCode == http.StatusInsufficientStorage && cmp.Or(v.Error.Code, v.Error.Type) != "storage_full" {
			return resp.StatusCode, "", fmt.Errorf("507 without the error code storage_full: %.200s", body)
		}
		if err != nil || resp.StatusCode != http.StatusOK || jerr != nil {
			return resp.StatusCode, "", err
		}
		return resp.StatusCode, v.ID, nil
	}
	// A stream: its id is in the first event that has one; it is complete
	// with [DONE] or message_stop.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	complete := false
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" || strings.Contains(data, `"type":"message_stop"`) {
			complete = true
			continue
		}
		if id == "" {
			var v struct {
				ID      string `json:"id"`
				Message struct {
					ID string `json:"id"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(data), &v) == nil {
				id = v.ID + v.Message.ID
			}
		}
	}
	if !complete {
		return resp.StatusCode, "", sc.Err()
	}
	return resp.StatusCode, id, nil
}
