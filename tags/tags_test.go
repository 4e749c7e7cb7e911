package tags

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	long := strings.Repeat("a", MaxLen)
	for i, tc := range []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "  ", want: nil},
		{in: "search", want: []string{"search"}},
		{in: " team-a , project:search,env/prod ", want: []string{"team-a", "project:search", "env/prod"}},
		{in: long, want: []string{long}},
		{in: long + "a", wantErr: "longer than 64 bytes"},
		{in: "a,,b", wantErr: "empty"},
		{in: "a,", wantErr: "empty"},
		{in: "a,b,a", wantErr: `"a" is repeated`},
		{in: "a b", wantErr: "only letters"},
		{in: "caf\u00e9", wantErr: "only letters"},
		{in: "a\x00", wantErr: "only letters"},
		{in: "0,1,2,3,4,5,6,7,8,9", want: strings.Split("0,1,2,3,4,5,6,7,8,9", ",")},
		{in: "0,1,2,3,4,5,6,7,8,9,10", wantErr: "at most 10 tags"},
	} {
		got, err := Parse(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Test %d: Parse(%q) error %v, want one with %q", i, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Test %d: Parse(%q) = %q, %v; want %q", i, tc.in, got, err, tc.want)
		}
	}
}

func TestCheckRefusesCommas(t *testing.T) {
	if err := Check([]string{"a,b"}); err == nil {
		t.Fatal("a default tag with a comma was accepted: it would read back as two tags")
	}
	if err := Check([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
}
