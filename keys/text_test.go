package keys

import (
	"context"
	"strings"
	"testing"
)

func TestCreateRefusesUnsafeText(t *testing.T) {
	s, _ := newTestService(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		o         CreateOptions
		wantField string // "" if the key is created
	}{
		{"plain", CreateOptions{User: "alice@example.com", Name: "laptop"}, ""},
		{"a name of 100 characters, not bytes", CreateOptions{User: "alice", Name: strings.Repeat("é", MaxNameLen)}, ""},
		{"a user id of 256 characters", CreateOptions{User: strings.Repeat("u", MaxUserLen), Name: "ci"}, ""},
		{"escape sequences in the name", CreateOptions{User: "alice", Name: "ok\x1b]0;pwned\a\x1b[2J\x1b[31mRED"}, "name"},
		{"NUL in the name", CreateOptions{User: "alice", Name: "a\x00b"}, "name"},
		{"DEL in the name", CreateOptions{User: "alice", Name: "a\x7fb"}, "name"},
		{"a C1 control in the name", CreateOptions{User: "alice", Name: "a\u009bb"}, "name"},
		{"a tab in the name", CreateOptions{User: "alice", Name: "a\tb"}, "name"},
		{"invalid UTF-8 in the name", CreateOptions{User: "alice", Name: "a\xffb"}, "name"},
		{"a name of 101 characters", CreateOptions{User: "alice", Name: strings.Repeat("n", MaxNameLen+1)}, "name"},
		{"a name of 5000 characters", CreateOptions{User: "alice", Name: strings.Repeat("n", 5000)}, "name"},
		{"NUL in the user", CreateOptions{User: "ali\x00ce"}, "user"},
		{"ESC in the user", CreateOptions{User: "alice\x1b[2J"}, "user"},
		{"a user id of 257 characters", CreateOptions{User: strings.Repeat("u", MaxUserLen+1)}, "user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, k, err := s.Create(ctx, tc.o)
			if tc.wantField == "" {
				if err != nil || k.Name != tc.o.Name {
					t.Fatalf("created %+v, %v", k, err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.wantField+": ") {
				t.Fatalf("error %v, want one naming %s", err, tc.wantField)
			}
		})
	}
	list, err := s.List(ctx, "")
	if err != nil || len(list) != 3 {
		t.Errorf("stored %d keys, want only the 3 valid ones (%v)", len(list), err)
	}
}
