package mockprovider

import (
	"bytes"
	"encoding/binary"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestTranscribe(t *testing.T) {
	base := newServer(t, Config{})
	wav := append([]byte("RIFF\x00\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00\x80\x3e\x00\x00"), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(wav[28:], 32000) // byte rate: 16 kHz 16-bit mono
	wav = append(wav, "\x02\x00\x10\x00data\x00\x00\x00\x00"...)
	wav = append(wav, make([]byte, 64000)...) // 2 s
	post := func(fields map[string]string, file []byte) (int, string, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		if file != nil {
			w, _ := mw.CreateFormFile("file", "a.wav")
			_, _ = w.Write(file)
		}
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/audio/transcriptions", &buf)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		_, _ = out.ReadFrom(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), out.String()
	}
	if status, _, body := post(map[string]string{"model": "whisper-1"}, wav); status != 200 || gjson.Get(body, "usage.seconds").Int() != 2 ||
		!strings.Contains(gjson.Get(body, "text").Str, "2000 milliseconds") {
		t.Fatalf("json: %d %s", status, body)
	}
	if status, _, body := post(map[string]string{"model": "gpt-4o-transcribe"}, wav); status != 200 || gjson.Get(body, "usage.input_token_details.audio_tokens").Int() != 20 {
		t.Fatalf("tokens: %d %s", status, body)
	}
	if status, _, body := post(map[string]string{"model": "whisper-1", "response_format": "vtt"}, wav); status != 200 ||
		!strings.HasPrefix(body, "WEBVTT\n\n00:00:00.000 --> 00:00:02.000\n") {
		t.Fatalf("vtt: %d %q", status, body)
	}
	if status, _, body := post(map[string]string{"model": "whisper-1"}, nil); status != 400 || gjson.Get(body, "error.param").Str != "file" {
		t.Fatalf("no file: %d %s", status, body)
	}
}
