package reqscan

import (
	"github.com/caddy-air/caddy-air/dialect"
	"net/http"
	"strings"
	"testing"

	"github.com/caddy-air/caddy-air/apierror"
)

// sixteenMiB is the size of the deep bodies below: the default
// max_request_body, and far past what a recursive validator survives.
const sixteenMiB = 16 << 20

func TestInspectRejectsDeepNesting(t *testing.T) {
	nest := func(open, close string, n int) string {
		return strings.Repeat(open, n) + strings.Repeat(close, n)
	}
	inspects := []struct {
		name    string
		inspect func([]byte, int) (dialect.Inspected, *apierror.Error)
	}{{"chat", InspectChat}, {"messages", InspectMessages}}
	for i, tc := range []struct {
		body  string
		limit int
		want  string // the message of the error, "" when accepted
	}{
		{strings.Repeat("[", sixteenMiB), 0, "the request body nests deeper than the limit of 128 levels"},
		{strings.Repeat(`{"a":`, sixteenMiB/5), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat("[", sixteenMiB-64), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + nest("[", "]", 127) + `}`, 0, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + nest("[", "]", 128) + `}`, 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":` + strings.Repeat(`{"a":`, 128) + "1" + strings.Repeat("}", 129), 0, "the request body nests deeper than the limit of 128 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]}`, 3, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]}`, 2, "the request body nests deeper than the limit of 2 levels"},
		{`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("[", sixteenMiB-128) + `"}]}`, 0, ""},
		{`{"model":"m","messages":[{"role":"user","content":"x"}],"x":[[1]]`, 0, "the request body is not valid JSON"},
	} {
		for _, in := range inspects {
			_, e := in.inspect([]byte(tc.body), tc.limit)
			switch {
			case tc.want == "" && e != nil:
				t.Errorf("Test %d (%s): rejected: %s", i, in.name, e.Message)
			case tc.want == "":
			case e == nil:
				t.Errorf("Test %d (%s): accepted, want %q", i, in.name, tc.want)
			case e.Status != http.StatusBadRequest || e.Type != apierror.TypeInvalidRequest || e.Message != tc.want:
				t.Errorf("Test %d (%s): got %d %s %q, want 400 invalid_request_error %q", i, in.name, e.Status, e.Type, e.Message, tc.want)
			}
		}
	}
}
