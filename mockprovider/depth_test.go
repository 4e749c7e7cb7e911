package mockprovider

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestDeepBodies posts bodies nested far past the limit to every endpoint
// that reads JSON: each answers 400 in its provider's error shape, naming
// the limit, and the mock keeps serving.
func TestDeepBodies(t *testing.T) {
	const tooDeep = "the request body nests deeper than the limit of 128 levels"
	base := newServer(t, Config{})
	brackets := strings.Repeat("[", 16<<20)
	objects := strings.Repeat(`{"a":`, 3<<20)
	for i, tc := range []struct {
		path      string
		anthropic bool
	}{
		{"/chat/completions", false},
		{"/images/generations", false},
		{"/videos", false},
		{"/messages", true},
		{"/messages/count_tokens", true},
	} {
		for _, body := range []string{brackets, objects} {
			status, _, got := post(t, base+tc.path, body, "anthropic-version", "2023-06-01")
			msg := gjson.Get(got, "error.message").String()
			if status != http.StatusBadRequest || msg != tooDeep {
				t.Errorf("Test %d (%s): got %d %q, want 400 %q", i, tc.path, status, msg, tooDeep)
			}
			if typ := gjson.Get(got, "type").String(); tc.anthropic != (typ == "error") {
				t.Errorf("Test %d (%s): error in the wrong shape: %s", i, tc.path, got)
			}
		}
	}
	status, _, got := post(t, base+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+strings.Repeat("[", 1<<20)+`"}]}`)
	if status != http.StatusOK {
		t.Errorf("brackets inside a string: got %d %.200s", status, got)
	}
}

func TestMaxJSONDepth(t *testing.T) {
	base := newServer(t, Config{MaxJSONDepth: 3})
	for i, tc := range []struct {
		body string
		want int
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}]}`, http.StatusOK},
		{`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, http.StatusBadRequest},
	} {
		status, _, got := post(t, base+"/chat/completions", tc.body)
		if status != tc.want {
			t.Errorf("Test %d: got %d %.200s, want %d", i, status, got, tc.want)
		}
		if tc.want == http.StatusBadRequest && !strings.Contains(got, "the limit of 3 levels") {
			t.Errorf("Test %d: %s does not name the limit", i, got)
		}
	}
}
