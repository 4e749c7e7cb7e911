package admin

import (
	"strings"
	"testing"
	"time"

	"github.com/caddy-air/caddy-air/keys"
)

func TestTerminalSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"laptop", "laptop"},
		{"café ☕", "café ☕"},
		{"ok\x1b]0;pwned\a\x1b[2J\x1b[31mRED", `ok\x1b]0;pwned\a\x1b[2J\x1b[31mRED`},
		{"a\x00b\x7fc", `a\x00b\x7fc`},
		{"tab\there\nnl", `tab\there\nnl`},
		{"c1\u009bx", `c1\u009bx`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"\ufffd kept", "\ufffd kept"},
	} {
		if got := terminalSafe(tc.in); got != tc.want {
			t.Errorf("terminalSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPrintKeysEscapesControls(t *testing.T) {
	var b strings.Builder
	k := keys.Key{ID: "key_1", User: "al\x1bice", Name: "ok\x1b]0;pwned\a\x1b[2J", CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		State: keys.StateActive, Models: []string{"gpt\x07"}}
	if err := PrintKeys(&b, []keys.Key{k}, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.ContainsFunc(strings.ReplaceAll(out, "\n", ""), func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		t.Errorf("the listing holds control characters: %q", out)
	}
	for _, want := range []string{`al\x1bice`, `ok\x1b]0;pwned\a\x1b[2J`, `gpt\a`} {
		if !strings.Contains(out, want) {
			t.Errorf("the listing lacks %q:\n%s", want, out)
		}
	}
}
