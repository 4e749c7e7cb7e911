package chatproxy

import (
	"github.com/caddy-air/caddy-air/dialect/openai"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// TestServeTranscriptStream forwards a transcription stream, holds its
// done event as the final one, and takes the usage from it; a stream that
// ends without it is cut.
func TestServeTranscriptStream(t *testing.T) {
	done := `data: {"type":"transcript.text.done","text":"a b","usage":{"type":"tokens","input_tokens":30,"input_token_details":{"audio_tokens":25,"text_tokens":5},"output_tokens":3}}` + "\n\n"
	for i, c := range []struct {
		events  []string
		outcome string
		usage   billing.Usage
	}{
		{[]string{`data: {"type":"transcript.text.delta","delta":"a "}` + "\n\n", `data: {"type":"transcript.text.delta","delta":"b"}` + "\n\n", done},
			OutcomeOK, billing.Usage{Input: 30, AudioInput: 25, Output: 3}},
		{[]string{`data: {"type":"transcript.text.delta","delta":"a "}` + "\n\n"}, OutcomeUpstreamError, billing.Usage{}},
	} {
		up := newUpstream(t, sseAnswer(c.events))
		url, results := gateway(t, func() *Call {
			return &Call{Wire: openai.TranscriptWire, Provider: provider("openai", 0, up.URL), Path: "/audio/transcriptions",
				Body: []byte("--x\r\n\r\n--x--"), ContentType: "multipart/form-data; boundary=x", ClientHeader: http.Header{}, RequestID: "r"}
		})
		resp, err := http.Post(url, "multipart/form-data; boundary=x", strings.NewReader("--x--"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res := <-results
		if c.outcome == OutcomeOK && !strings.HasSuffix(string(body), done) {
			t.Errorf("Test %d: the client's stream %q does not end with the done event", i, body)
		}
		if res.Outcome != c.outcome || c.outcome == OutcomeOK && (res.Usage != c.usage || res.Source != billing.SourceReported) {
			t.Errorf("Test %d: result %+v", i, res)
		}
		if got := up.headers[0].Get("Content-Type"); got != "multipart/form-data; boundary=x" {
			t.Errorf("Test %d: upstream content type %q", i, got)
		}
	}
}
