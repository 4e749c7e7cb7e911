package console

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"

	"go.uber.org/zap"
)

// maxPlaygroundBody bounds a playground conversation.
const maxPlaygroundBody = 1 << 20

// playgroundData is the playground page's data.
type playgroundData struct {
	Models []string
}

func (h *Handler) playgroundPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Playground == nil {
		h.fail(w, r, http.StatusNotFound, "the playground is not served here")
		return
	}
	h.render(w, r, http.StatusOK, "playground", "Playground", playgroundData{Models: h.cfg.Services.Playground.Models()})
}

// playgroundRequest is what the playground's script posts.
type playgroundRequest struct {
	Model    string            `json:"model"`
	Messages []json.RawMessage `json:"messages"`
}

// playgroundChat streams a chat completion for the signed-in user. The
// answer is the chat endpoint's own event stream; once the request has
// settled, one more event, `air.settled`, carries its tokens and cost.
func (h *Handler) playgroundChat(w http.ResponseWriter, r *http.Request) {
	pg := h.cfg.Services.Playground
	if pg == nil {
		http.Error(w, "the playground is not served here", http.StatusNotFound)
		return
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPlaygroundBody))
	if err != nil {
		http.Error(w, "the conversation is too large", http.StatusRequestEntityTooLarge)
		return
	}
	var req playgroundRequest
	if err := json.Unmarshal(data, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "send {\"model\":…, \"messages\":[…]}", http.StatusBadRequest)
		return
	}
	if !slices.Contains(pg.Models(), req.Model) {
		http.Error(w, "pick one of the listed models", http.StatusBadRequest)
		return
	}
	body, err := json.Marshal(map[string]any{
		"model": req.Model, "messages": req.Messages, "stream": true,
		"stream_options": map[string]bool{"include_usage": true},
	})
	if err != nil {
		http.Error(w, "bad conversation", http.StatusBadRequest)
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	settled, err := pg.Chat(sw, r, userOf(r), body)
	if err != nil {
		h.cfg.Logger.Warn("console: a playground request did not settle", zap.Error(err))
	}
	if settled == nil || sw.status != http.StatusOK || r.Context().Err() != nil {
		return
	}
	var b bytes.Buffer
	b.WriteString("event: air.settled\ndata: ")
	_ = json.NewEncoder(&b).Encode(settled)
	b.WriteString("\n")
	if _, err := w.Write(b.Bytes()); err == nil {
		_ = http.NewResponseController(w).Flush()
	}
}

// statusWriter remembers the status a handler wrote. It exposes only the
// ResponseWriter's own methods, and Unwrap, so flushes reach the client.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status.
func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
