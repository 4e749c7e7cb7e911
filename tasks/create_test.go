package tasks

import (
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

func TestAttemptFor(t *testing.T) {
	p := &providers.Provider{BaseURLs: []string{"https://a/v1/", "https://b/v1"}, APIKeys: []string{"k1", "k2"}}
	for i, c := range []struct {
		base, key string
		want      providers.Attempt
	}{
		{"https://b/v1", "k2", providers.Attempt{BaseURL: "https://b/v1", APIKey: "k2"}},
		{"https://a/v1", "k2", providers.Attempt{BaseURL: "https://a/v1", APIKey: "k2"}},
		{"https://b/v1", "rotated", providers.Attempt{BaseURL: "https://b/v1", APIKey: "k1"}},
		{"https://gone/v1", "k2", providers.Attempt{BaseURL: "https://a/v1", APIKey: "k1"}},
	} {
		got := attemptFor(p, &Task{BaseURL: c.base, KeyHash: keyHash(c.key)})
		if got != c.want {
			t.Errorf("Test %d: %+v, want %+v", i, got, c.want)
		}
	}
}
