package gemini

import (
	"encoding/json"
	"net/http"
	"strings"
)

// streamChunk is how many bytes of text one chunk carries.
const streamChunk = 5

// writeStream writes a's answer as SSE chunks, each a whole
// GenerateContentResponse: the text in pieces, a function call whole,
// and finishReason and usageMetadata on the last chunk, which also
// carries the last piece of the answer. With "mock:usage-chunk" in the
// prompt, every chunk carries the running usageMetadata of the prompt
// alone, and the whole usage comes after the finish reason, in a last
// chunk without candidates (as Vertex AI may send it).
func writeStream(w http.ResponseWriter, a mockAnswer, prompt string) {
	split := strings.Contains(prompt, "mock:usage-chunk")
	var chunks [][]part
	for _, p := range a.parts {
		if p.Text == nil || len(*p.Text) <= streamChunk {
			chunks = append(chunks, []part{p})
			continue
		}
		text := *p.Text
		for i := 0; len(text) > 0; i++ {
			n := min(streamChunk, len(text))
			for n < len(text) && text[n]&0xC0 == 0x80 {
				n++
			}
			piece := text[:n]
			q := part{Text: &piece, Thought: p.Thought}
			text = text[n:]
			if len(text) == 0 {
				q.ThoughtSignature = p.ThoughtSignature
			}
			chunks = append(chunks, []part{q})
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, c := range chunks {
		last := i == len(chunks)-1
		finish := ""
		if last {
			finish = "STOP"
		}
		r := a.response(c, finish, last && !split)
		if split {
			r["usageMetadata"] = map[string]int64{"promptTokenCount": a.usage.PromptTokenCount, "totalTokenCount": a.usage.PromptTokenCount}
		}
		b, _ := json.Marshal(r)
		ev := "data: " + string(b) + "\r\n\r\n"
		switch {
		case i == 1 && strings.Contains(prompt, "mock:error"):
			e, _ := json.Marshal(map[string]any{"error": map[string]any{"code": 503, "status": "UNAVAILABLE", "message": "The model is overloaded."}})
			w.Write([]byte("data: " + string(e) + "\r\n\r\n"))
			return
		case last && strings.Contains(prompt, "mock:cut-event"):
			w.Write([]byte(ev[:len(ev)/2]))
			return
		case last && strings.Contains(prompt, "mock:cut"):
			return
		}
		write(w, ev)
	}
	if split {
		u := a.response(nil, "", true)
		delete(u, "candidates")
		b, _ := json.Marshal(u)
		write(w, "data: "+string(b)+"\r\n\r\n")
	}
}

// write writes and flushes one SSE event.
func write(w http.ResponseWriter, ev string) {
	w.Write([]byte(ev))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
