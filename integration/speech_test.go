package integration

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// speechPrices prices mock-tts per input character, as OpenAI's tts-1.
const speechPrices = `{"currency": "USD", "models": {"mock-tts": {"character": "0.000015"}}}`

// TestSpeechOpenAISDK turns text into speech with openai-go through the
// gateway and the mock, into files that decode as the formats asked for
// (WAV: a RIFF header whose sizes match the file; MP3: a run of whole
// MPEG-1 Layer III frames), each leaving one record billed per
// character; a format the model does not produce is refused before any
// upstream sees it.
func TestSpeechOpenAISDK(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: speechPrices,
		Providers: "provider dead {\n\t\t\tprotocol openai\n\t\t\tbase_url http://127.0.0.1:1/v1\n\t\t\tapi_key k\n\t\t}",
		Models:    "model tts-dead dead {\n\t\t\tkind speech\n\t\t\tfallback mock-tts\n\t\t}"})
	key, _ := createKey(t, "speech-sdk")
	client := openai.NewClient(option.WithBaseURL(baseURL+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	input := "Hello from the gateway, ünïcode counts as characters."
	chars := int64(len([]rune(input)))
	dir := t.TempDir()
	save := func(format openai.AudioSpeechNewParamsResponseFormat) []byte {
		t.Helper()
		resp, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
			Model: "mock-tts", Input: input, Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")}, ResponseFormat: format,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		path := filepath.Join(dir, "speech."+string(format))
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(f, resp.Body); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}

	wav := save(openai.AudioSpeechNewParamsResponseFormatWAV)
	wantMillis := chars * 50
	if len(wav) < 44 || string(wav[:4]) != "RIFF" || string(wav[8:16]) != "WAVEfmt " || string(wav[36:40]) != "data" ||
		binary.LittleEndian.Uint16(wav[20:]) != 1 || int(binary.LittleEndian.Uint32(wav[4:])) != len(wav)-8 ||
		int(binary.LittleEndian.Uint32(wav[40:])) != len(wav)-44 {
		t.Fatalf("not a whole WAV file: %d bytes, header % x", len(wav), wav[:min(len(wav), 44)])
	}
	rate := int64(binary.LittleEndian.Uint32(wav[24:]))
	if got := int64(len(wav)-44) / 2 * 1000 / rate; got != wantMillis {
		t.Fatalf("WAV of %d ms, want %d", got, wantMillis)
	}

	mp3 := save(openai.AudioSpeechNewParamsResponseFormatMP3)
	if len(mp3) == 0 || len(mp3)%417 != 0 {
		t.Fatalf("MP3 of %d bytes is not whole 417-byte frames", len(mp3))
	}
	for off := 0; off < len(mp3); off += 417 {
		// Frame sync, MPEG-1 Layer III, 128 kbit/s at 44.1 kHz.
		if mp3[off] != 0xFF || mp3[off+1]&0xFE != 0xFA || mp3[off+2]>>4 != 9 || (mp3[off+2]>>2)&3 != 0 {
			t.Fatalf("no MP3 frame header at %d: % x", off, mp3[off:off+4])
		}
	}

	recs := waitLedger(t, "speech-sdk", 2)
	for _, rec := range recs {
		if rec.Endpoint != "speech" || rec.Model != "mock-tts" || rec.Outcome != "ok" || rec.Usage.Characters != chars ||
			!rec.Priced || !sameDecimal(rec.Cost, perMillion(chars, "15").String()) || len(rec.Unpriced) != 0 {
			t.Fatalf("record %+v, want %d characters at 0.000015", rec, chars)
		}
	}

	// A format the model's formats do not list: 400 naming the ones it
	// has; no record.
	_, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Model: "mock-tts", Input: "x", Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatOpus,
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Param != "response_format" ||
		!strings.Contains(apiErr.Message, "mp3, wav, pcm") {
		t.Fatalf("opus: %v", err)
	}
	// No input, and speech events the gateway does not forward.
	for _, body := range []string{`{"model":"mock-tts","voice":"alloy"}`, `{"model":"mock-tts","input":"x","voice":"alloy","stream_format":"sse"}`} {
		status, _, b := call(t, http.MethodPost, "/v1/audio/speech", key, body)
		if status != http.StatusBadRequest || !bytes.Contains(b, []byte(`"param"`)) {
			t.Fatalf("%s: %d %s", body, status, b)
		}
	}
	if recs := ledgerOf(t, "speech-sdk"); len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}

	// A model whose provider is down falls back to mock-tts, which
	// answers and prices the one record.
	resp, err := client.Audio.Speech.New(ctx, openai.AudioSpeechNewParams{
		Model: "tts-dead", Input: input, Voice: openai.AudioSpeechNewParamsVoiceUnion{OfString: openai.String("alloy")},
		ResponseFormat: openai.AudioSpeechNewParamsResponseFormatPCM,
	})
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || int64(len(pcm)) != wantMillis*24*2 {
		t.Fatalf("fallback: %d bytes of PCM, want %d: %v", len(pcm), wantMillis*48, err)
	}
	recs = waitLedger(t, "speech-sdk", 3)
	if r := recs[2]; r.Model != "tts-dead" || r.ServedModel != "mock-tts" || r.Provider != "mock" || !sameDecimal(r.Cost, perMillion(chars, "15").String()) {
		t.Fatalf("fallback record %+v", r)
	}
}

// TestSpeechClientLeaves reads the first MiB of a long speech answer and
// hangs up: the provider synthesized it all, so its one record bills every
// character, with the outcome partial.
func TestSpeechClientLeaves(t *testing.T) {
	startGateway(t, gatewayOptions{Prices: speechPrices})
	key, _ := createKey(t, "speech-leaves")
	input := strings.Repeat("long speech ", 150) // 1,800 characters: 360 s of audio at speed 0.25, 17 MB of WAV
	body := `{"model":"mock-tts","voice":"alloy","response_format":"wav","speed":0.25,"input":"` + input + `"}`
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/v1/audio/speech", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	recs := waitLedger(t, "speech-leaves", 1)
	chars := int64(len(input))
	if r := recs[0]; len(recs) != 1 || r.Usage.Characters != chars || r.Outcome != "partial" || !sameDecimal(r.Cost, perMillion(chars, "15").String()) {
		t.Fatalf("records %+v, want one partial billing %d characters", recs, chars)
	}
	if recs := ledgerOf(t, "speech-leaves"); len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
}
