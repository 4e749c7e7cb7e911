package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// transcriptionPrices prices whisper-1 per second of audio and the gpt-4o
// transcriber per token.
const transcriptionPrices = `{"currency": "USD", "models": {
	"whisper-1": {"audio_second": "0.0001"},
	"gpt-4o-mini-transcribe": {"tiers": [{"input": "1.25", "output": "5"}], "audio": {"input": "3"}}
}}`

// wavOf returns a WAV file of ms milliseconds of 16 kHz 16-bit mono audio.
func wavOf(ms int) []byte {
	data := ms * 32
	b := []byte("RIFF")
	b = binary.LittleEndian.AppendUint32(b, uint32(36+data))
	b = append(b, "WAVEfmt "...)
	b = binary.LittleEndian.AppendUint32(b, 16)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 16000)
	b = binary.LittleEndian.AppendUint32(b, 32000)
	b = binary.LittleEndian.AppendUint16(b, 2)
	b = binary.LittleEndian.AppendUint16(b, 16)
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, uint32(data))
	for i := range data / 2 {
		b = binary.LittleEndian.AppendUint16(b, uint16(i*37))
	}
	return b
}

// TestTranscriptionsOpenAISDK transcribes a WAV file of several MiB with
// openai-go through the gateway and the mock (which parses the form for
// real), as JSON, SRT and text, and translates it: each leaves one record
// billed by the seconds the provider reports, or, for text (no usage), by
// the file's own duration; a gpt-4o transcriber is billed by its reported
// tokens. A form without a file, an upload over the limit and streamed
// transcripts are refused with clear errors, and no record.
func TestTranscriptionsOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: transcriptionPrices, Models: "model gpt-4o-mini-transcribe mock {\n\t\t\tkind transcription\n\t\t}"})
	key, _ := createKey(t, "transcribe-sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	const ms = 95_500 // 3 MB of audio
	wav := wavOf(ms)
	file := func() *bytes.Reader { return bytes.NewReader(wav) }

	tr, err := client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "whisper-1", File: openai.File(file(), "talk.wav", "audio/wav"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tr.Text, "95500 milliseconds") {
		t.Fatalf("transcript %q", tr.Text)
	}
	rec := waitLedger(t, "transcribe-sdk", 1)[0]
	if rec.Endpoint != "transcriptions" || rec.Model != "whisper-1" || rec.Usage.AudioMillis != 96_000 || rec.Source != "reported" ||
		!sameDecimal(rec.Cost, "0.0096") {
		t.Fatalf("record %+v, want 96 reported seconds at 0.0001", rec)
	}

	// SRT: the subtitle as the provider wrote it.
	var srt string
	_, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "whisper-1", File: openai.File(file(), "talk.wav", "audio/wav"), ResponseFormat: openai.AudioResponseFormatSRT,
	}, option.WithResponseBodyInto(&srt))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srt, "1\n00:00:00,000 --> 00:01:35,500\n") {
		t.Fatalf("srt %q", srt)
	}
	// Text has no usage: billed on the file's duration, read from it.
	var text string
	_, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "whisper-1", File: openai.File(file(), "talk.wav", "audio/wav"), ResponseFormat: openai.AudioResponseFormatText,
	}, option.WithResponseBodyInto(&text))
	if err != nil || !strings.Contains(text, "transcript") {
		t.Fatalf("text %q %v", text, err)
	}
	recs := waitLedger(t, "transcribe-sdk", 3)
	if r := recs[2]; r.Usage.AudioMillis != ms || r.Source != "units" || !sameDecimal(r.Cost, "0.00955") {
		t.Fatalf("text record %+v, want %d ms from the file at 0.0001 a second", r, ms)
	}

	tl, err := client.Audio.Translations.New(ctx, openai.AudioTranslationNewParams{
		Model: "whisper-1", File: openai.File(file(), "talk.wav", "audio/wav"),
	})
	if err != nil || !strings.HasPrefix(tl.Text, "Translated: ") {
		t.Fatalf("translation %+v %v", tl, err)
	}
	recs = waitLedger(t, "transcribe-sdk", 4)
	if r := recs[3]; r.Endpoint != "translations" || r.Usage.AudioMillis != 96_000 {
		t.Fatalf("translation record %+v", r)
	}

	// A gpt-4o transcriber reports tokens: audio input at the audio
	// price, the rest at the tier's.
	tr, err = client.Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
		Model: "gpt-4o-mini-transcribe", File: openai.File(file(), "talk.wav", "audio/wav"),
	})
	if err != nil {
		t.Fatal(err)
	}
	recs = waitLedger(t, "transcribe-sdk", 5)
	u := tr.Usage
	want := perMillion(u.InputTokenDetails.AudioTokens, "3").Add(perMillion(u.InputTokens-u.InputTokenDetails.AudioTokens, "1.25")).
		Add(perMillion(u.OutputTokens, "5"))
	if r := recs[4]; r.Usage.Input != u.InputTokens || r.Usage.AudioInput != u.InputTokenDetails.AudioTokens || r.Usage.Output != u.OutputTokens ||
		u.InputTokenDetails.AudioTokens != 955 || !sameDecimal(r.Cost, want.String()) {
		t.Fatalf("tokens record %+v, usage %+v, want cost %s", r, u, want)
	}

	// Bad input: no file (400 on file), an upload over 25 MiB (413), a
	// body that is not a form (415).
	var apiErr *openai.Error
	status, _, body := postForm(t, key, "/v1/audio/transcriptions", map[string]string{"model": "whisper-1"}, nil)
	if e := decodeError(t, body); status != http.StatusBadRequest || e.Error.Param == nil || *e.Error.Param != "file" {
		t.Fatalf("no file: %d %s", status, body)
	}
	status, _, body = postForm(t, key, "/v1/audio/transcriptions", map[string]string{"model": "whisper-1"}, make([]byte, 26<<20))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "request_too_large") && !strings.Contains(string(body), "too large") {
		t.Fatalf("oversized: %d %s", status, body)
	}
	status, _, body = call(t, http.MethodPost, "/v1/audio/transcriptions", key, `{"model":"whisper-1"}`)
	if status != http.StatusUnsupportedMediaType {
		t.Fatalf("json body: %d %s", status, body)
	}
	if recs := ledgerOf(t, "transcribe-sdk"); len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}

	// A streamed transcript: its deltas as they come, and the done event
	// (the end the gateway holds for the record) with the usage it is
	// billed on.
	stream := client.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{
		Model: "gpt-4o-mini-transcribe", File: openai.File(file(), "talk.wav", "audio/wav"),
	})
	var deltas strings.Builder
	var done openai.TranscriptionTextDoneEvent
	for stream.Next() {
		switch ev := stream.Current(); ev.Type {
		case "transcript.text.delta":
			deltas.WriteString(ev.Delta)
		case "transcript.text.done":
			done = ev.AsTranscriptTextDone()
		}
	}
	if err := stream.Err(); err != nil || deltas.String() != done.Text || !strings.Contains(done.Text, "95500 milliseconds") {
		t.Fatalf("stream: %v, deltas %q, done %+v", err, deltas.String(), done)
	}
	recs = waitLedger(t, "transcribe-sdk", 6)
	du := done.Usage
	want = perMillion(du.InputTokenDetails.AudioTokens, "3").Add(perMillion(du.InputTokens-du.InputTokenDetails.AudioTokens, "1.25")).
		Add(perMillion(du.OutputTokens, "5"))
	if r := recs[5]; r.Usage.Input != du.InputTokens || r.Usage.AudioInput != 955 || r.Usage.Output != du.OutputTokens || r.Source != "reported" ||
		!sameDecimal(r.Cost, want.String()) {
		t.Fatalf("stream record %+v, usage %+v, want cost %s", r, du, want)
	}
	// A model that does not stream: the provider's 400, passed through.
	stream = client.Audio.Transcriptions.NewStreaming(ctx, openai.AudioTranscriptionNewParams{
		Model: "whisper-1", File: openai.File(file(), "talk.wav", "audio/wav"),
	})
	for stream.Next() {
	}
	if err := stream.Err(); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "stream" {
		t.Fatalf("stream of whisper-1: %v", err)
	}
	if recs := waitLedger(t, "transcribe-sdk", 7); len(recs) != 7 || recs[6].Outcome != "upstream_error" || !sameDecimal(recs[6].Cost, "0") {
		t.Fatalf("records %+v, want a 7th of the upstream's refusal at no cost", recs)
	}

	// A 20 MiB file, beyond the pooled buffers' largest class (16 MiB)
	// and max_request_body, within the upload limit.
	status, _, body = postForm(t, key, "/v1/audio/transcriptions", map[string]string{"model": "whisper-1", "response_format": "text"}, wavOf(655_000))
	if status != http.StatusOK || !strings.Contains(string(body), "655000 milliseconds") {
		t.Fatalf("20 MiB upload: %d %s", status, body)
	}
	if recs := waitLedger(t, "transcribe-sdk", 8); recs[7].Usage.AudioMillis != 655_000 || !sameDecimal(recs[7].Cost, "0.0655") {
		t.Fatalf("record of the 20 MiB upload %+v", recs[7])
	}
}

// postForm posts a multipart form of fields and, if not nil, a file.
func postForm(t *testing.T, key, path string, fields map[string]string, file []byte) (int, http.Header, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	if file != nil {
		w, _ := mw.CreateFormFile("file", "big.wav")
		_, _ = w.Write(file)
	}
	_ = mw.Close()
	req, err := http.NewRequest(http.MethodPost, baseURL+path, &buf)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, out.Bytes()
}

// TestNodeSDKAudio runs integration/node/audio.test.mjs (the npm `openai`
// SDK on speech, transcription and moderation), then checks the three
// records the successful calls left and their costs.
func TestNodeSDKAudio(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: `{"currency": "USD", "models": {
		"mock-tts": {"character": "0.000015"}, "whisper-1": {"audio_second": "0.0001"}, "omni-moderation-latest": {"request": "0"}}}`})
	key, _ := createKey(t, "node-audio")
	if _, err := os.Stat("node/node_modules/openai"); err != nil {
		t.Fatalf("the npm SDKs are not installed (run scripts/test.sh, or npm ci in integration/node): %v", err)
	}
	cmd := exec.Command("node", "--test", "--test-reporter=spec", "audio.test.mjs")
	cmd.Dir = "node"
	cmd.Env = append(os.Environ(), "GATEWAY_URL="+baseURL, "AIR_KEY="+key)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Fatalf("the npm SDK tests failed: %v", err)
	}
	want := map[string]string{"speech": "0.00018", "transcriptions": "0.0132", "moderations": "0"}
	recs := waitLedger(t, "node-audio", 3)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if w, ok := want[r.Endpoint]; !ok || r.Outcome != "ok" || !sameDecimal(r.Cost, w) {
			t.Errorf("record %+v, want cost %s", r, w)
		}
		delete(want, r.Endpoint)
	}
}
