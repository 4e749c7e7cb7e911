package jsonlimit

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// drain reads every token of b and returns them, as "kind:text" strings,
// with the error that ended the scan.
func drain(b []byte, limit int) ([]string, error) {
	var s Scanner
	s.Reset(b, limit)
	var toks []string
	for {
		t, err := s.Next()
		if err != nil {
			return toks, err
		}
		if t.Kind == Done {
			return toks, nil
		}
		toks = append(toks, fmt.Sprintf("%d:%s", t.Kind, b[t.Start:t.End]))
	}
}

func TestScannerTokens(t *testing.T) {
	for i, tc := range []struct {
		in   string
		want []string
	}{
		{`{}`, []string{"1:{", "2:}"}},
		{` [ ] `, []string{"3:[", "4:]"}},
		{`{"a" : [1, -2.5e3, "x\"y", true, false, null, {}], "b":{"c":[]}}`, []string{
			"1:{", `5:"a"`, "3:[", "7:1", "7:-2.5e3", `6:"x\"y"`, "8:true", "9:false", "10:null", "1:{", "2:}", "4:]",
			`5:"b"`, "1:{", `5:"c"`, "3:[", "4:]", "2:}", "2:}"}},
		{`"s"`, []string{`6:"s"`}},
	} {
		got, err := drain([]byte(tc.in), 10)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Test %d: %q: got %q, %v; want %q", i, tc.in, got, err, tc.want)
		}
	}
}

// TestScannerMatchesCheck checks that draining a Scanner ends with the
// error Check returns, on texts valid, invalid and too deep.
func TestScannerMatchesCheck(t *testing.T) {
	inputs := []string{
		`{}`, `[]`, `{"a":1}`, `{"a":1,}`, `{,}`, `[,]`, `[1,]`, `{"a"}`, `{"a" 1}`, `{"a":}`, `{} x`, ``, ` `,
		`{"a":[1,2,{"b":null}]}`, `[[[[1]]]]`, `[[[[1]]]`, `{"a":{"b":{"c":{"d":1}}}}`, `"\x"`, "\"\x01\"", `01`, `1.`,
		`-`, `tru`, `nul`, `[}`, `{]`, `{"a":1]`, `[1}`, string(deep("[", "]", 600, true)), string(deep(`{"a":`, "}", 600, false)),
	}
	for i, in := range inputs {
		for _, limit := range []int{0, 1, 3, 128, jsonCap} {
			want := Check([]byte(in), limit)
			_, got := drain([]byte(in), limit)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Test %d: %.40q at limit %d: scanner %v, Check %v", i, in, limit, got, want)
			}
		}
	}
}

func TestScannerSkip(t *testing.T) {
	b := []byte(`{"skip":{"x":[1,{"y":"]}"}]},"next":[ 2 ],"s":"v"}`)
	var s Scanner
	s.Reset(b, 8)
	var got []string
	for {
		tok, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		switch tok.Kind {
		case Done:
			if want := []string{`{"x":[1,{"y":"]}"}]}`, `[ 2 ]`, `"v"`}; !reflect.DeepEqual(got, want) {
				t.Errorf("skipped %q, want %q", got, want)
			}
			return
		case Key:
			v, _ := s.Next()
			end, err := s.Skip(v)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, string(b[v.Start:end]))
		}
	}
}

func TestScannerDeepStack(t *testing.T) {
	// Past the inline stack, objects and arrays alternate.
	in := strings.Repeat(`[{"a":`, 400) + "1" + strings.Repeat("}]", 400)
	if _, err := drain([]byte(in), 1000); err != nil {
		t.Fatal(err)
	}
	var de *DepthError
	if _, err := drain([]byte(in), 799); !errors.As(err, &de) || de.Limit != 799 {
		t.Errorf("limit 799: %v, want a depth error", err)
	}
}
