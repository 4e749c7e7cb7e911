package tasks

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestForwardBody: the upstream gets the client's members untouched, in
// order, with the documented edits only.
func TestForwardBody(t *testing.T) {
	video := forwardEdits{model: "sora-2", drop: []string{"negative_prompt", "seed", "n"}, secondsAsString: true}
	image := forwardEdits{model: "gpt-image-1", drop: []string{"negative_prompt", "seed"}, defaultSize: "1024x1024"}
	for i, tc := range []struct {
		body string
		e    forwardEdits
		want string
	}{
		{`{"model":"my-video","prompt":"a wave","seconds":8,"size":"1280x720","negative_prompt":"x","seed":3}`, video,
			`{"model":"sora-2","prompt":"a wave","seconds":"8","size":"1280x720"}`},
		// Members the gateway does not know pass byte for byte, nested
		// values and spacing inside them included.
		{`{ "prompt" : "a \"quoted\" wave\n", "extra": {"a": [1, 2, {"b": null}]}, "model": "m", "seconds": "4" }`, video,
			`{"prompt" : "a \"quoted\" wave\n","extra": {"a": [1, 2, {"b": null}]},"model":"sora-2","seconds": "4"}`},
		// A missing model is added; an escaped key is still the model.
		{`{"prompt":"p"}`, video, `{"prompt":"p","model":"sora-2"}`},
		{`{"mod\u0065l":"m","prompt":"p"}`, video, `{"model":"sora-2","prompt":"p"}`},
		// Duplicates of edited members leave one.
		{`{"model":"a","n":1,"model":"b","n":2,"prompt":"p"}`, video, `{"model":"sora-2","prompt":"p"}`},
		// Images: size added when missing, kept when given; seconds is
		// not theirs to quote.
		{`{"model":"img","prompt":"p","n":2}`, image, `{"model":"gpt-image-1","prompt":"p","n":2,"size":"1024x1024"}`},
		{`{"model":"img","prompt":"p","size":"512x512","seconds":3}`, image, `{"model":"gpt-image-1","prompt":"p","size":"512x512","seconds":3}`},
		{`{}`, image, `{"model":"gpt-image-1","size":"1024x1024"}`},
	} {
		got, err := forwardBody([]byte(tc.body), 128, tc.e)
		if err != nil {
			t.Errorf("Test %d: %v", i, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Test %d:\n got %s\nwant %s", i, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("Test %d: invalid JSON %s", i, got)
		}
	}
	for i, bad := range []string{`[1]`, `"x"`, `{"a":`, `{"a":1}}`} {
		if got, err := forwardBody([]byte(bad), 128, video); err == nil {
			t.Errorf("bad %d: %s gave %s, want an error", i, bad, got)
		}
	}
	deep := `{"a":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`
	if _, err := forwardBody([]byte(deep), 128, video); err == nil {
		t.Error("a body deeper than the limit was forwarded")
	}
}
