package responses

import (
	"testing"

	"github.com/caddy-air/caddy-air/providers"
)

func TestResponseRefAttempt(t *testing.T) {
	prov := &providers.Provider{Name: "p", BaseURLs: []string{"http://a/v1/", "http://b/v1"}, APIKeys: []string{"k0", "k1"}}
	for _, tc := range []struct {
		name string
		ref  Ref
		prov *providers.Provider
		want providers.Attempt
		ok   bool
	}{
		{"same deployment, trailing slash", Ref{BaseURL: "http://a/v1", Key: 1}, prov, providers.Attempt{BaseURL: "http://a/v1", APIKey: "k1"}, true},
		{"second base url", Ref{BaseURL: "http://b/v1", Key: 0}, prov, providers.Attempt{BaseURL: "http://b/v1", APIKey: "k0"}, true},
		{"base url no longer configured", Ref{BaseURL: "http://c/v1", Key: 0}, prov, providers.Attempt{}, false},
		{"key no longer configured", Ref{BaseURL: "http://a/v1", Key: 2}, prov, providers.Attempt{}, false},
		{"created without a key, provider now has keys", Ref{BaseURL: "http://a/v1", Key: -1}, prov, providers.Attempt{}, false},
		{"provider without keys", Ref{BaseURL: "http://a/v1", Key: -1}, &providers.Provider{BaseURLs: []string{"http://a/v1"}}, providers.Attempt{BaseURL: "http://a/v1"}, true},
		{"provider gone", Ref{BaseURL: "http://a/v1", Key: 0}, nil, providers.Attempt{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.ref.AttemptOf(tc.prov)
			if got != tc.want || ok != tc.ok {
				t.Errorf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
