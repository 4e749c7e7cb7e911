package jsonlimit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

// lowLimit is the limit FuzzCheck compares at besides encoding/json's cap;
// small enough that the fuzzer reaches it often.
const lowLimit = 3

// FuzzCheck compares Check with encoding/json.Valid: at encoding/json's
// own cap the decisions are the same; at a low limit every text that
// json.Valid accepts and that nests at most that deep passes, and an error
// is the one the high limit finds, or a depth error before it.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`[1,-2.5e+3,true,false,null,"\u00e9\n",{},[]]`,
		`[[[[1]]]]`, `{"a":{"b":{"c":{"d":1}}}}`, `[[[[`, `"[[[["`,
		"\"\xff\xfe\"", "\"\x01\"", `{"a" 1}`, `01`, `1.`, `-`, `[1,]`, `{} x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		high := Check(b, jsonCap)
		if (high == nil) != json.Valid(b) {
			t.Fatalf("Check(%q) = %v, json.Valid disagrees", b, high)
		}
		low := Check(b, lowLimit)
		var de *DepthError
		switch {
		case low == nil:
			if high != nil {
				t.Fatalf("Check(%q): passes at limit %d, fails at %d: %v", b, lowLimit, jsonCap, high)
			}
		case errors.As(low, &de):
			var hde *DepthError
			var hse *SyntaxError
			switch {
			case high == nil:
				if d := depthOf(t, b); d <= lowLimit {
					t.Fatalf("Check(%q): depth %d refused at limit %d", b, d, lowLimit)
				}
			case errors.As(high, &hde):
			case errors.As(high, &hse) && hse.Offset > de.Offset:
			default:
				t.Fatalf("Check(%q): %v at limit %d, but %v at %d", b, low, lowLimit, high, jsonCap)
			}
		default:
			var lse, hse *SyntaxError
			if !errors.As(low, &lse) || !errors.As(high, &hse) || *lse != *hse {
				t.Fatalf("Check(%q): %v at limit %d, but %v at %d", b, low, lowLimit, high, jsonCap)
			}
		}
	})
}

// depthOf returns the nesting depth of the valid JSON text b, as
// encoding/json's decoder sees it.
func depthOf(t *testing.T, b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest
		}
		if err != nil {
			t.Fatalf("decoding %q: %v", b, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// FuzzScanner checks that a Scanner read to the end decides as Check does,
// with the same error, at a low limit and at encoding/json's cap.
func FuzzScanner(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`[1,-2.5e+3,true,false,null,"\u00e9\n",{},[]]`, `[[[[1]]]]`, `{"a" 1}`, `[1,]`, `{} x`, `{"a":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, limit := range []int{lowLimit, jsonCap} {
			want := Check(b, limit)
			if _, got := drain(b, limit); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q at limit %d: scanner %v, Check %v", b, limit, got, want)
			}
		}
	})
}
