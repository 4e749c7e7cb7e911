package tasks

import (
	"testing"
)

func TestCheckUnique(t *testing.T) {
	for i, c := range []struct {
		body      string
		set       MemberSet
		wantParam string // "" when the body passes
	}{
		{`{"model":"m","n":1,"n":5}`, TaskMembers, "n"},
		{`{"n":1,"model":"m","n":5}`, TaskMembers, "n"},
		{`{"size":"1x1","size":"2x2"}`, TaskMembers, "size"},
		{`{"seconds":4,"duration":4,"seconds":8}`, TaskMembers, "seconds"},
		{`{"\u006e":1,"n":5}`, TaskMembers, "n"},
		{`{"mod\u0065l":"a","model":"b"}`, TaskMembers, "model"},
		{`{"negative_prompt":"a","negative\u005fprompt":"b"}`, TaskMembers, "negative_prompt"},
		{`{"response_format":"url","response_format":"b64_json"}`, ImagesMembers, "response_format"},
		// Repeats the gateway does not read pass.
		{`{"response_format":"url","response_format":"b64_json"}`, TaskMembers, ""},
		{`{"quality":"low","quality":"hd","user":"a","user":"b"}`, ImagesMembers, ""},
		{`{"extra":{"n":1,"n":2},"n":3}`, TaskMembers, ""},
		{`{"n\n":1,"n":2,"\u00f1":3,"\u00f1":4}`, TaskMembers, ""},
		{`{"model":"m","prompt":"x","size":"1x1","n":1,"seed":1,"seconds":1,"duration":1,"negative_prompt":""}`, ImagesMembers, ""},
		// Not an object: left to the caller.
		{`[1,1]`, TaskMembers, ""},
		{`{"n":1,"n":`, TaskMembers, ""},
	} {
		aerr := CheckUnique([]byte(c.body), 0, c.set)
		switch {
		case c.wantParam == "" && aerr != nil:
			t.Errorf("Test %d: %s refused: %v", i, c.body, aerr)
		case c.wantParam != "" && aerr == nil:
			t.Errorf("Test %d: %s passed, want a repeated %q refused", i, c.body, c.wantParam)
		case aerr != nil && (aerr.Status != 400 || aerr.Type != "invalid_request_error" || aerr.Param == nil || *aerr.Param != c.wantParam):
			t.Errorf("Test %d: %s: %+v, want a 400 invalid_request_error about %q", i, c.body, aerr, c.wantParam)
		}
	}
}
