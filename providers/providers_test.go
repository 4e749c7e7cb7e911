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

// TestNewTableMixedGroups: a chat or messages model's deployments may be
// on providers of different protocols; any other kind's may not, nor a
// cohere provider's.
func TestNewTableMixedGroups(t *testing.T) {
	provs := func() (oa, an, co *Provider) {
		return &Provider{Name: "oa", Protocol: ProtocolOpenAI, BaseURLs: []string{"http://oa"}},
			&Provider{Name: "an", Protocol: ProtocolAnthropic, BaseURLs: []string{"http://an"}},
			&Provider{Name: "co", Protocol: ProtocolCohere, BaseURLs: []string{"http://co"}}
	}
	for i, tc := range []struct {
		kind  string
		first string // "oa", "an" or "co"
		other string
		err   string // "" when accepted
	}{
		{"", "an", "oa", ""},
		{"", "oa", "an", ""},
		{KindChat, "an", "oa", ""},
		{KindMessages, "oa", "an", ""},
		{KindEmbedding, "oa", "an", "only chat and messages models may mix them"},
		{KindRerank, "co", "oa", "only chat and messages models may mix them"},
		{KindChat, "oa", "co", "a cohere provider serves no chat model"},
	} {
		oa, an, co := provs()
		by := map[string]*Provider{"oa": oa, "an": an, "co": co}
		r := &Route{Pattern: "m", Kind: tc.kind, Deployments: []*Deployment{{Provider: by[tc.first], UpstreamModel: "a"}, {Provider: by[tc.other], UpstreamModel: "b"}}}
		tb, err := NewTable([]*Provider{oa, an, co}, []*Route{r})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Test %d: %v, want %q", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		got, _ := tb.Lookup("m")
		if got.Provider != by[tc.first] || len(got.Deployments) != 2 || tc.kind == "" && got.Kind != DefaultKind(by[tc.first].Protocol) {
			t.Errorf("Test %d: route %+v", i, got)
		}
	}
}
