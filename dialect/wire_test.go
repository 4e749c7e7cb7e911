package dialect

import "testing"

// TestKeepHeader: a client sees the providers' own headers (rate limits,
// processing time, versions), never those naming the operator's account
// with the provider, nor other vendors' headers.
func TestKeepHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Openai-Processing-Ms":               true,
		"Openai-Version":                     true,
		"Anthropic-Ratelimit-Requests-Limit": true,
		"Openai-Organization":                false,
		"Openai-Project":                     false,
		"Anthropic-Organization-Id":          false,
		"X-Amzn-Requestid":                   false,
		"Set-Cookie":                         false,
	} {
		if got := KeepHeader(name); got != want {
			t.Errorf("KeepHeader(%q) = %v, want %v", name, got, want)
		}
	}
}
