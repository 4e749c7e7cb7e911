package keys

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Bounds of a key's free-text fields, in characters (Unicode code
// points).
const (
	// MaxNameLen is the longest key name.
	MaxNameLen = 100
	// MaxUserLen is the longest user id that may own a key: room for an
	// e-mail address (at most 254) or an OIDC subject.
	MaxUserLen = 256
)

// checkText returns an error naming field if s is not UTF-8, holds a
// control character (Unicode category Cc: C0 controls such as NUL, tab
// and ESC, DEL, and C1 controls), or is longer than limit characters.
// Names and user ids are printed to terminals and pages: a control
// character in them could rewrite what an operator sees.
func checkText(field, s string, limit int) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s: holds the control character %U; control characters are not allowed", field, r)
		}
		n++
	}
	if n > limit {
		return fmt.Errorf("%s: %d characters, longer than the limit of %d", field, n, limit)
	}
	return nil
}
