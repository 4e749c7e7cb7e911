package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// jsonCap is encoding/json's own nesting cap: with it as the limit, Check
// and json.Valid decide alike on every input.
const jsonCap = 10000

// deep returns n opening brackets of open, then n closing ones when closed.
func deep(open, close string, n int, closed bool) []byte {
	var b bytes.Buffer
	b.Grow(n * (len(open) + len(close)))
	for range n {
		b.WriteString(open)
	}
	if closed {
		for range n {
			b.WriteString(close)
		}
	}
	return b.Bytes()
}

// verdict names the outcome of Check: "ok", "syntax" or "depth".
func verdict(err error) string {
	var de *DepthError
	var se *SyntaxError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &de):
		return "depth"
	case errors.As(err, &se):
		return "syntax"
	}
	return "unexpected " + err.Error()
}

func TestCheck(t *testing.T) {
	for i, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{`{}`, 1, "ok"},
		{`[]`, 1, "ok"},
		{` { "a" : [ 1 , 2.5e-3 , true , false , null , "x" ] } `, 2, "ok"},
		{"\t\r\n[\n]\r\n", 1, "ok"},
		{`0`, 0, "ok"},
		{`-0.0e+0`, 0, "ok"},
		{`123456789`, 0, "ok"},
		{`1E9`, 0, "ok"},
		{`"\"\\\/\b\f\n\r\t\u00e9\uD83D\uDE00"`, 0, "ok"},
		{`"\ud800"`, 0, "ok"}, // a lone surrogate escape: encoding/json accepts it
		{"\"caf\xc3\xa9 \xe2\x82\xac\"", 0, "ok"},
		{"\"\xff\xfe\x80 invalid UTF-8\"", 0, "ok"}, // as encoding/json: no UTF-8 check
		{"\"\xed\xa0\x80\"", 0, "ok"},               // an encoded surrogate, likewise
		{`{"a":{"b":{"c":[]}}}`, 4, "ok"},
		{`{"a":{"b":{"c":[]}}}`, 3, "depth"},
		{`[[1],[2],[[3]]]`, 3, "ok"},
		{`[[1],[2],[[3]]]`, 2, "depth"},
		{`[]`, 0, "depth"},
		{`[]`, -1, "depth"},
		{`"[[[[[[[[[[[[[[[[[[[["`, 1, "ok"},
		{`{"a":"{{{{{{{{{{{{{{{{{{{{{{{{"}`, 1, "ok"},
		{``, 1, "syntax"},
		{`   `, 1, "syntax"},
		{`[`, 1, "syntax"},
		{`{`, 1, "syntax"},
		{`{"a"`, 1, "syntax"},
		{`{"a":`, 1, "syntax"},
		{`{"a":1`, 1, "syntax"},
		{`[1,`, 1, "syntax"},
		{`"abc`, 1, "syntax"},
		{`"abc\`, 1, "syntax"},
		{`"\u12`, 1, "syntax"},
		{`"\u12g4"`, 1, "syntax"},
		{`"\x"`, 1, "syntax"},
		{"\"a\x01b\"", 1, "syntax"},
		{"\"a\tb\"", 1, "syntax"},
		{"\"long string with a control\x1f character\"", 1, "syntax"},
		{"\xef\xbb\xbf{}", 1, "syntax"}, // a byte order mark
		{"[\xff]", 1, "syntax"},
		{`[1,]`, 1, "syntax"},
		{`[,1]`, 1, "syntax"},
		{`{,}`, 1, "syntax"},
		{`{"a":1,}`, 1, "syntax"},
		{`{"a" 1}`, 1, "syntax"},
		{`{1:2}`, 1, "syntax"},
		{`[1 2]`, 1, "syntax"},
		{`[1}`, 1, "syntax"},
		{`{"a":1]`, 1, "syntax"},
		{`{}}`, 1, "syntax"},
		{`{} {}`, 1, "syntax"},
		{`1 2`, 1, "syntax"},
		{`01`, 1, "syntax"},
		{`-`, 1, "syntax"},
		{`-a`, 1, "syntax"},
		{`+1`, 1, "syntax"},
		{`.5`, 1, "syntax"},
		{`1.`, 1, "syntax"},
		{`1.e5`, 1, "syntax"},
		{`1e`, 1, "syntax"},
		{`1e+`, 1, "syntax"},
		{`0x10`, 1, "syntax"},
		{`NaN`, 1, "syntax"},
		{`tru`, 1, "syntax"},
		{`truex`, 1, "syntax"},
		{`nul`, 1, "syntax"},
		{`True`, 1, "syntax"},
		{"\x00", 1, "syntax"},
		{"[1]\x00", 1, "syntax"},
		{"\v1", 1, "syntax"},
		// A syntax error before the first bracket over the limit wins.
		{`[x[[[`, 2, "syntax"},
		// The first bracket over the limit wins over a later syntax error.
		{`[[[x`, 2, "depth"},
	} {
		got := verdict(Check([]byte(tc.in), tc.limit))
		if got != tc.want {
			t.Errorf("Test %d: Check(%q, %d) = %s, want %s", i, tc.in, tc.limit, got, tc.want)
		}
		if tc.want != "depth" && (got == "ok") != json.Valid([]byte(tc.in)) {
			t.Errorf("Test %d: Check(%q) = %s, json.Valid disagrees", i, tc.in, got)
		}
	}
}

func TestCheckDeep(t *testing.T) {
	const sixteenMiB = 16 << 20
	for i, tc := range []struct {
		name   string
		in     []byte
		limit  int
		want   string
		offset int // of the error, when one is wanted
	}{
		{"16 MiB of [", deep("[", "", sixteenMiB, false), 128, "depth", 128},
		{"16 MiB of {\"a\":", deep(`{"a":`, "", sixteenMiB/5, false), 128, "depth", 128 * 5},
		{"alternating", deep(`[{"k":`, "", 100_000, false), 128, "depth", 64 * 6},
		{"at the limit", deep("[", "]", 128, true), 128, "ok", 0},
		{"one past the limit", deep("[", "]", 129, true), 128, "depth", 128},
		{"objects at the limit", append(deep(`{"a":`, "}", 128, false), append([]byte("1"), bytes.Repeat([]byte("}"), 128)...)...), 128, "ok", 0},
		{"objects past the limit", append(deep(`{"a":`, "}", 129, false), append([]byte("1"), bytes.Repeat([]byte("}"), 129)...)...), 128, "depth", 128 * 5},
		{"past the inline stack", deep("[", "]", 5000, true), 10000, "ok", 0},
		{"at encoding/json's cap", deep("[", "]", jsonCap, true), jsonCap, "ok", 0},
		{"past encoding/json's cap", deep("[", "]", jsonCap+1, true), jsonCap, "depth", jsonCap},
		{"deep inside a string", append(append([]byte(`{"a":"`), deep("[", "", 1<<20, false)...), `"}`...), 128, "ok", 0},
		{"deep and unclosed", deep("[", "", 100, false), 128, "syntax", 100},
	} {
		err := Check(tc.in, tc.limit)
		if got := verdict(err); got != tc.want {
			t.Errorf("Test %d (%s): got %s (%v), want %s", i, tc.name, got, err, tc.want)
			continue
		}
		var de *DepthError
		var se *SyntaxError
		switch {
		case errors.As(err, &de):
			if de.Limit != tc.limit || de.Offset != tc.offset {
				t.Errorf("Test %d (%s): got %+v, want limit %d at offset %d", i, tc.name, *de, tc.limit, tc.offset)
			}
			if !strings.Contains(de.Error(), "limit of 128 levels") && tc.limit == 128 {
				t.Errorf("Test %d (%s): message %q does not name the limit", i, tc.name, de.Error())
			}
		case errors.As(err, &se):
			if se.Offset != tc.offset {
				t.Errorf("Test %d (%s): syntax error at %d, want %d", i, tc.name, se.Offset, tc.offset)
			}
		}
		if len(tc.in) <= 1<<20 && tc.limit >= jsonCap && (err == nil) != json.Valid(tc.in) {
			t.Errorf("Test %d (%s): json.Valid disagrees", i, tc.name)
		}
	}
}

// TestCheckTruncated checks every prefix of a document that exercises each
// token against encoding/json.
func TestCheckTruncated(t *testing.T) {
	doc := []byte(`{"model":"m","messages":[{"role":"user","content":"caf\u00e9 \"q\" ` +
		"\xe2\x82\xac" + `"}],"n":-12.5e+3,"ok":true,"no":false,"x":null,"e":[],"o":{}}`)
	if Check(doc, 3) != nil {
		t.Fatalf("the whole document fails")
	}
	for n := range len(doc) {
		err := Check(doc[:n], jsonCap)
		if (err == nil) != json.Valid(doc[:n]) {
			t.Errorf("prefix %q: Check = %v, json.Valid disagrees", doc[:n], err)
		}
	}
}

func TestCheckAllocs(t *testing.T) {
	body := chatBody(200 << 10)
	if n := testing.AllocsPerRun(10, func() {
		if err := Check(body, DefaultMaxDepth); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a valid body: %v allocations, want 0", n)
	}
	// A text deeper than the limit costs the error and nothing in
	// proportion to its depth.
	brackets := deep("[", "", 1<<20, false)
	if n := testing.AllocsPerRun(10, func() { _ = Check(brackets, 10000) }); n > 1+10000/64 {
		t.Errorf("1 MiB of [ at limit 10000: %v allocations", n)
	}
	if n := testing.AllocsPerRun(10, func() { _ = Check(brackets, DefaultMaxDepth) }); n > 1 {
		t.Errorf("1 MiB of [ at the default limit: %v allocations, want at most 1 (the error)", n)
	}
}

func TestOrDefault(t *testing.T) {
	for i, tc := range []struct{ in, want int }{{0, DefaultMaxDepth}, {-5, DefaultMaxDepth}, {1, 1}, {64, 64}, {20000, 20000}} {
		if got := OrDefault(tc.in); got != tc.want {
			t.Errorf("Test %d: OrDefault(%d) = %d, want %d", i, tc.in, got, tc.want)
		}
	}
}

// TestStringAlignment places escapes, quotes and control characters at
// every offset around the eight-byte words stringEnd loads, and compares
// Check with encoding/json.
func TestStringAlignment(t *testing.T) {
	pieces := []string{`\n`, `\"`, `\\`, `\u00e9`, `\u00`, `\x`, "\x01", `"`, `\`, "é", "\xff"}
	for _, p := range pieces {
		for _, q := range pieces {
			for pre := 0; pre < 18; pre++ {
				for gap := 0; gap < 10; gap++ {
					in := `"` + strings.Repeat("a", pre) + p + strings.Repeat("b", gap) + q + `"`
					if got, want := Check([]byte(in), 1) == nil, json.Valid([]byte(in)); got != want {
						t.Fatalf("%q: Check says valid %v, encoding/json %v", in, got, want)
					}
				}
			}
		}
	}
}
