package dialect

import "testing"

// TestKindOf: every dialect classes a provider's status the same way, so
// a client sees a Bedrock or Gemini 408 as a timeout and an Anthropic 529
// as an overloaded provider, whatever protocol it speaks.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   ErrorKind
	}{
		{400, ErrInvalidRequest},
		{401, ErrAuthentication},
		{403, ErrPermission},
		{404, ErrNotFound},
		{408, ErrTimeout},
		{413, ErrTooLarge},
		{422, ErrInvalidRequest},
		{429, ErrRateLimit},
		{500, ErrServer},
		{502, ErrServer},
		{503, ErrOverloaded},
		{504, ErrTimeout},
		{529, ErrOverloaded},
	} {
		if got := KindOf(tc.status); got != tc.want {
			t.Errorf("KindOf(%d) = %s, want %s", tc.status, got, tc.want)
		}
	}
}
