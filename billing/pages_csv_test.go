package billing

import "testing"

func TestCSVTextDefusesFormulas(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gpt-4o", "gpt-4o"},
		{"", ""},
		{"=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"},
		{"+1", "'+1"},
		{"-2", "'-2"},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"\tx", "'\tx"},
		{"a=b", "a=b"},
	} {
		if got := csvText(tc.in); got != tc.want {
			t.Errorf("csvText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	row := csvRow(&Record{ID: "r1", Model: "=cmd", User: "@u"})
	if row[3] != "'@u" || row[5] != "'=cmd" {
		t.Errorf("row %q: user and model cells not defused", row)
	}
}
