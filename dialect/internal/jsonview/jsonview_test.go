package jsonview

import (
	"encoding/json"
	"testing"
)

func TestTextMatchesEncodingJSON(t *testing.T) {
	for i, raw := range []string{
		`"plain text"`,
		`""`,
		`"line\nbreak \"quoted\" tab\t slash\/ back\\"`,
		`"\u00e9t\u00e9 \ud83d\ude00 emoji"`,
		`"lone \ud83d surrogate"`,
		`"bad \x escape"`,
		`"\b\f\r"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			// encoding/json refuses invalid escapes; ours yields U+FFFD.
			want = "bad \uFFFD escape"
		}
		got, _ := Text(nil, raw)
		if string(got) != want {
			t.Errorf("Test %d: Text(%s) = %q, want %q", i, raw, got, want)
		}
	}
	if got, _ := Text(nil, `123`); got != nil {
		t.Errorf("a number token gave text %q", got)
	}
}

func TestTextAliasesWithoutEscapes(t *testing.T) {
	buf := []byte(`"hello"`)
	got, _ := Text(nil, String(buf))
	buf[1] = 'j'
	if string(got) != "jello" {
		t.Errorf("text without escapes is a copy, not a view: %q", got)
	}
}

func BenchmarkTextEscaped(b *testing.B) {
	raw := `"some \"escaped\" text\nwith a newline"`
	var scratch []byte
	b.ReportAllocs()
	for b.Loop() {
		_, scratch = Text(scratch, raw)
	}
}

func TestMember(t *testing.T) {
	obj := ` { "a" : "x\"}" , "nested":{"k":[1,{"t":"}"}]}, "text":"he said \"hi\"\n", "n": -1.5e3 ,"b":true}`
	for i, tc := range []struct {
		key, want string
		ok        bool
	}{
		{"a", `"x\"}"`, true},
		{"nested", `{"k":[1,{"t":"}"}]}`, true},
		{"text", `"he said \"hi\"\n"`, true},
		{"n", `-1.5e3`, true},
		{"b", `true`, true},
		{"t", "", false},
		{"k", "", false},
	} {
		got, ok := Member(obj, tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Test %d: Member(%q) = %q, %v; want %q, %v", i, tc.key, got, ok, tc.want, tc.ok)
		}
	}
	for _, bad := range []string{``, `[]`, `"s"`, `{"a"`, `{"a":`, `{"a":1 "b":2}`} {
		if _, ok := Member(bad, "b"); ok {
			t.Errorf("Member found b in %q", bad)
		}
	}
}

func TestAppendTextKeepsEarlierTexts(t *testing.T) {
	var arena []byte
	a, arena := AppendText(arena, `"one\n"`)
	b, arena := AppendText(arena, `"plain"`)
	c, _ := AppendText(arena, `"two\t"`)
	if string(a) != "one\n" || string(b) != "plain" || string(c) != "two\t" {
		t.Errorf("texts %q %q %q", a, b, c)
	}
}
