package tasks

import (
	"testing"

	"github.com/caddy-air/caddy-air/billing"
)

// TestOpenAIImagesUsage reads the token usage of a gpt-image-1 answer,
// which the ledger prices by image tokens, and none from an answer
// without usage (dall-e), which is priced per image.
func TestOpenAIImagesUsage(t *testing.T) {
	for i, tc := range []struct {
		answer string
		want   *billing.Usage
	}{
		{`{"created":1,"data":[{"b64_json":"aGk="}],"usage":{"input_tokens":50,"output_tokens":4160,` +
			`"input_tokens_details":{"text_tokens":40,"image_tokens":10},"total_tokens":4210}}`,
			&billing.Usage{Input: 50, ImageInput: 10, Output: 4160, ImageOutput: 4160}},
		{`{"created":1,"data":[{"url":"https://x/y.png"}]}`, nil},
		{`{"created":1,"data":[{"url":"https://x/y.png"}],"usage":"lots"}`, nil},
	} {
		out, err := openAIImages([]byte(tc.answer), &charge{}, 200)
		if err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if (out.usage == nil) != (tc.want == nil) || out.usage != nil && *out.usage != *tc.want {
			t.Errorf("Test %d: usage %+v, want %+v", i, out.usage, tc.want)
		}
	}
}
