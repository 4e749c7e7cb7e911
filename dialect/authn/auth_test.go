package authn

import (
	"net/http"
	"testing"
)

func TestSetAuth(t *testing.T) {
	client := http.Header{"Anthropic-Version": {"2026-10-21"}, "Anthropic-Beta": {"b1"}}
	for i, tc := range []struct {
		protocol, key string
		client        http.Header
		want          http.Header
	}{
		{"openai", "sk-1", nil, http.Header{"Authorization": {"Bearer sk-1"}}},
		{"dashscope", "sk-2", client, http.Header{"Authorization": {"Bearer sk-2"}}},
		{"openai", "", nil, http.Header{}},
		{"anthropic", "ak", nil, http.Header{"X-Api-Key": {"ak"}, "Anthropic-Version": {DefaultAnthropicVersion}}},
		{"anthropic", "ak", client, http.Header{"X-Api-Key": {"ak"}, "Anthropic-Version": {"2026-10-21"}, "Anthropic-Beta": {"b1"}}},
		{"anthropic", "", nil, http.Header{"Anthropic-Version": {DefaultAnthropicVersion}}},
		{"gemini", "AIza-1", client, http.Header{"X-Goog-Api-Key": {"AIza-1"}}},
		{"gemini", "", nil, http.Header{}},
	} {
		h := http.Header{}
		SetAuth(h, tc.protocol, tc.key, tc.client)
		if len(h) != len(tc.want) {
			t.Errorf("Test %d: got %v, want %v", i, h, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got := h.Values(k); len(got) != len(v) || got[0] != v[0] {
				t.Errorf("Test %d: %s = %v, want %v", i, k, got, v)
			}
		}
	}
}
