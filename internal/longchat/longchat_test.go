package longchat

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestBody(t *testing.T) {
	for i, tc := range []struct {
		size        int
		extra       string
		minMessages int
	}{
		{1 << 10, "", 4},
		{200 << 10, "", 40},
		{1 << 20, `"stream":true`, 200},
	} {
		b := Body("m", tc.size, tc.extra)
		if len(b) < tc.size || len(b) > tc.size+16<<10 {
			t.Errorf("Test %d: %d bytes, want %d to %d", i, len(b), tc.size, tc.size+16<<10)
		}
		var req struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
			Stream   bool              `json:"stream"`
		}
		if err := json.Unmarshal(b, &req); err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
		if req.Model != "m" || len(req.Messages) < tc.minMessages || len(req.Tools) == 0 || req.Stream != (tc.extra != "") {
			t.Errorf("Test %d: model %q, %d messages, %d tools, stream %v", i, req.Model, len(req.Messages), len(req.Tools), req.Stream)
		}
		var last struct{ Role string }
		if err := json.Unmarshal(req.Messages[len(req.Messages)-1], &last); err != nil || last.Role != "tool" {
			t.Errorf("Test %d: the last message is a %q, want a tool result", i, last.Role)
		}
		if !bytes.Equal(b, Body("m", tc.size, tc.extra)) {
			t.Errorf("Test %d: two calls gave different bodies", i)
		}
	}
}
