package providers

import (
	"strings"
	"testing"
)

// TestNewTableKinds checks the kinds of the endpoints issue (#33) and the
// cohere protocol, whose routes default to rerank.
func TestNewTableKinds(t *testing.T) {
	cohere := &Provider{Name: "cohere", Protocol: ProtocolCohere, BaseURLs: []string{"https://api.cohere.com/v2"}, APIKeys: []string{"k"}}
	openai := &Provider{Name: "openai", Protocol: ProtocolOpenAI, BaseURLs: []string{"https://api.openai.com/v1"}, APIKeys: []string{"k"}}
	tb, err := NewTable([]*Provider{cohere, openai}, []*Route{
		{Pattern: "rerank-v3.5", Provider: cohere},
		{Pattern: "tts-1", Provider: openai, Kind: KindSpeech, Formats: []string{"mp3"}},
		{Pattern: "whisper-1", Provider: openai, Kind: KindTranscription},
		{Pattern: "omni-moderation-latest", Provider: openai, Kind: KindModeration},
	})
	if err != nil {
		t.Fatal(err)
	}
	for model, kind := range map[string]string{"rerank-v3.5": KindRerank, "tts-1": KindSpeech, "whisper-1": KindTranscription,
		"omni-moderation-latest": KindModeration} {
		if r, err := tb.Lookup(model); err != nil || r.Kind != kind {
			t.Errorf("%s: %+v %v, want kind %s", model, r, err, kind)
		}
	}
	_, err = NewTable([]*Provider{openai}, []*Route{{Pattern: "m", Provider: openai, Kind: "audio"}})
	if err == nil || !strings.Contains(err.Error(), `unknown kind "audio"`) {
		t.Errorf("unknown kind: %v", err)
	}
}
