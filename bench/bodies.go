package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/caddy-air/caddy-air/internal/longchat"
)

// systemPrompt and userPrompt make a realistic chat request of about 1 KB.
const (
	systemPrompt = "You are a helpful assistant for an online bookshop. Answer questions about orders, " +
		"shipping, returns and book recommendations. Be concise and friendly, and never invent order " +
		"numbers or tracking codes. If the customer asks about something unrelated to the shop, say " +
		"politely that you can only help with the shop."
	userPrompt = "Hello! I ordered three books last Tuesday: a hardcover edition of The Left Hand of " +
		"Darkness, a used paperback of Middlemarch and a new copy of The Structure of Scientific " +
		"Revolutions. The confirmation email said they would ship together within two business days, " +
		"but the order page still shows 'processing'. Could you tell me whether one of them is out " +
		"of stock, and if so, whether the others can ship first? Also, if the hardcover turns out to " +
		"be damaged on arrival, what is your return policy for it?"
)

// chatBody returns a chat completion request body for benchModel; stream
// asks for SSE, and extra (raw JSON members, may be empty) is appended.
func chatBody(stream bool, extra string) []byte { return chatBodyTokens(stream, 512, extra) }

// chatBodyTokens is chatBody with max_tokens maxTokens.
func chatBodyTokens(stream bool, maxTokens int, extra string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `{"model":%q,"messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"temperature":0.7,"max_tokens":%d`,
		benchModel, systemPrompt, userPrompt, maxTokens)
	if stream {
		b.WriteString(`,"stream":true`)
	}
	if extra != "" {
		b.WriteString(",")
		b.WriteString(extra)
	}
	b.WriteString("}")
	return []byte(b.String())
}

// slowChunks returns how many content chunks make a stream with delay
// between events last about life: the role chunk, the content chunks, the
// finish chunk and [DONE], with delay between each two.
func slowChunks(life, delay time.Duration) int {
	if delay <= 0 {
		return 1
	}
	return max(int(life/delay)-2, 1)
}

// longScenario is a constant-rate scenario of the traffic that grows
// fastest: long conversations and long streams.
type longScenario struct {
	id     int
	title  string
	body   []byte
	stream bool
	rate   int
	// minEvents is the fewest events each answer's stream must carry.
	minEvents int
}

// longScenarios returns scenarios 4 to 6: a coding agent's conversation of
// 200 KiB and of 1 MiB (longchat: many messages, code blocks, a tools
// array), and a stream of many chunks.
func longScenarios(o options) []longScenario {
	return []longScenario{
		{4, fmt.Sprintf("4. chat, JSON, 200 KiB conversation, %d req/s", o.longRate), longchat.Body(benchModel, 200<<10, ""), false, o.longRate, 0},
		{5, fmt.Sprintf("5. chat, JSON, 1 MiB conversation, %d req/s", o.longRate), longchat.Body(benchModel, 1<<20, ""), false, o.longRate, 0},
		// The mock answers max_tokens tokens of about four bytes: 512 would
		// cut a stream of 2,000 words of a few bytes each to some 320.
		{6, fmt.Sprintf("6. chat, SSE %d chunks, %d req/s", o.longChunks, o.longStreamRate),
			chatBodyTokens(true, 4*o.longChunks+1024, fmt.Sprintf(`"mock_chunks":%d`, o.longChunks)), true, o.longStreamRate, o.longChunks},
	}
}
