package mockprovider

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
)

// transcribe answers POST /v1/audio/transcriptions (and, with translate
// set, /v1/audio/translations) as OpenAI does. It parses the multipart
// form for real (the file part spills to disk past 8 MiB), requires a
// model and a file, and writes the transcript of the audio's duration (a
// WAV file's, exactly; another's from its size at 128 kbit/s) in
// response_format: json or verbose_json (with usage: tokens for gpt-4o
// models, seconds for the others), text, srt or vtt.
func (h *Handler) transcribe(w http.ResponseWriter, r *http.Request, translate bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		status := http.StatusBadRequest
		if strings.Contains(err.Error(), "too large") {
			status = http.StatusRequestEntityTooLarge
		}
		writeOpenAIError(w, status, "invalid_request_error", "", "", "could not parse multipart form: "+err.Error())
		return
	}
	defer func() { _ = r.MultipartForm.RemoveAll() }()
	model, format := r.FormValue("model"), r.FormValue("response_format")
	files := r.MultipartForm.File["file"]
	switch {
	case model == "":
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "model", "you must provide a model parameter")
		return
	case len(files) != 1:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "file", "you must provide one file")
		return
	}
	f, err := files[0].Open()
	if err != nil {
		writeOpenAIError(w, http.StatusInternalServerError, "server_error", "", "", err.Error())
		return
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	millis := mockAudioMillis(head[:n], files[0].Size)
	secs := float64(millis) / 1000
	text := fmt.Sprintf("This is the transcript of %d milliseconds of audio.", millis)
	if translate {
		text = "Translated: " + text
	}
	usage := map[string]any{"type": "duration", "seconds": math.Ceil(secs)}
	if strings.Contains(model, "gpt-4o") {
		audio := millis / 100 // 10 audio tokens a second
		usage = map[string]any{"type": "tokens", "input_tokens": audio + 5, "output_tokens": len(text) / 4, "total_tokens": audio + 5 + int64(len(text)/4),
			"input_token_details": map[string]int64{"audio_tokens": audio, "text_tokens": 5}}
	}
	if r.FormValue("stream") == "true" {
		if !strings.Contains(model, "gpt-4o") {
			writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "stream", "streaming is not supported for this model")
			return
		}
		streamTranscript(w, text, usage)
		return
	}
	end := subtitleTime(millis)
	switch format {
	case "", "json":
		writeJSON(w, map[string]any{"text": text, "usage": usage})
	case "verbose_json":
		task := "transcribe"
		if translate {
			task = "translate"
		}
		writeJSON(w, map[string]any{"task": task, "language": "english", "duration": secs, "text": text,
			"segments": []map[string]any{{"id": 0, "start": 0, "end": secs, "text": text}}, "usage": usage})
	case "text":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, text+"\n")
	case "srt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "1\n00:00:00,000 --> %s\n%s\n\n", strings.Replace(end, ".", ",", 1), text)
	case "vtt":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintf(w, "WEBVTT\n\n00:00:00.000 --> %s\n%s\n\n", end, text)
	default:
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "response_format",
			"response_format must be json, text, srt, verbose_json or vtt")
	}
}

// streamTranscript writes text as OpenAI's transcript events: a
// transcript.text.delta per word, then transcript.text.done with the
// whole text and the usage (no [DONE] follows).
func streamTranscript(w http.ResponseWriter, text string, usage any) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, word := range strings.SplitAfter(text, " ") {
		b, _ := json.Marshal(map[string]any{"type": "transcript.text.delta", "delta": word, "logprobs": nil})
		_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil && i%4 == 0 {
			flusher.Flush()
		}
	}
	b, _ := json.Marshal(map[string]any{"type": "transcript.text.done", "text": text, "usage": usage})
	_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
}

// subtitleTime formats millis as hh:mm:ss.mmm.
func subtitleTime(millis int64) string {
	return fmt.Sprintf("%02d:%02d:%02d.%03d", millis/3_600_000, millis/60_000%60, millis/1000%60, millis%1000)
}

// mockAudioMillis is the duration of a file of size bytes starting with
// head: a WAV file's from its fmt and data chunks, another's from its size
// at 128 kbit/s.
func mockAudioMillis(head []byte, size int64) int64 {
	if len(head) >= 44 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WAVE" && string(head[12:16]) == "fmt " {
		if rate := int64(binary.LittleEndian.Uint32(head[28:32])); rate > 0 {
			return (size - 44) * 1000 / rate
		}
	}
	return size * 8 / 128
}
