package mockprovider

import (
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

const (
	// imageTokens is what one image counts for in a prompt estimate.
	imageTokens = 85
	// echoRunes is how much of the user's last message the reply echoes.
	echoRunes = 40
	// defaultChunks is the default number of streamed content chunks.
	defaultChunks = 8
	// maxChunks bounds mock_chunks.
	maxChunks = 10000
)

// filler pads a reply that has fewer words than the requested chunks.
var filler = strings.Fields("This is a deterministic answer from the caddy-air mock provider.")

// promptTokens estimates the tokens of a prompt of n bytes with imgs images:
// a quarter of the bytes, at least 1.
func promptTokens(n, imgs int) int64 {
	t := int64(n/4) + int64(imgs)*imageTokens
	return max(t, 1)
}

// textTokens estimates the tokens of generated text: a quarter of its
// bytes, at least 1 unless it is empty.
func textTokens(s string) int64 {
	if s == "" {
		return 0
	}
	return max(int64(len(s)/4), 1)
}

// echoOf returns the first echoRunes runes of s with whitespace collapsed.
func echoOf(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	n := 0
	for i := range s {
		if n == echoRunes {
			return s[:i]
		}
		n++
	}
	return s
}

// replyText returns the mock answer to a message whose echo is e, padded
// with filler words so that it has at least chunks words.
func replyText(e string, chunks int) string {
	if e == "" {
		e = "(no text)"
	}
	text := "Mock reply to: " + e
	words := strings.Count(text, " ") + 1
	if words >= chunks {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + (chunks-words)*8)
	b.WriteString(text)
	if !strings.ContainsAny(text[len(text)-1:], ".!?") {
		b.WriteByte('.')
	}
	for i := 0; words < chunks; i++ {
		b.WriteByte(' ')
		b.WriteString(filler[i%len(filler)])
		words++
	}
	return b.String()
}

// reasoningText returns the mock reasoning about a message whose echo is e.
func reasoningText(e string) string {
	return "The user wrote: " + e + ". A short mock reply fits best."
}

// truncateBytes cuts s to at most n bytes on a rune boundary.
func truncateBytes(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// applyBudget truncates reasoning then text so that their token estimates
// fit into budget (no limit when budget is 0). It reports whether anything
// was cut.
func applyBudget(reasoning, text string, budget int64) (string, string, bool) {
	if budget <= 0 {
		return reasoning, text, false
	}
	rt := textTokens(reasoning)
	if rt >= budget {
		cut := rt > budget || text != ""
		return truncateBytes(reasoning, int(budget)*4), "", cut
	}
	left := budget - rt
	if textTokens(text) <= left {
		return reasoning, text, false
	}
	return reasoning, truncateBytes(text, int(left)*4), true
}

// wordBounds splits s at spaces into at most n pieces of whole words (each
// piece but the first starts with its space) and returns the n+1 (or
// fewer) piece boundaries.
func wordBounds(s string, n int) []int {
	if s == "" || n <= 0 {
		return nil
	}
	starts := make([]int, 1, strings.Count(s, " ")+1)
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' {
			starts = append(starts, i)
		}
	}
	if len(starts) < n {
		n = len(starts)
	}
	bounds := make([]int, 0, n+1)
	for j := range n {
		bounds = append(bounds, starts[j*len(starts)/n])
	}
	return append(bounds, len(s))
}

// evenBounds splits s into at most n pieces of about equal byte length on
// rune boundaries and returns the piece boundaries.
func evenBounds(s string, n int) []int {
	if s == "" || n <= 0 {
		return nil
	}
	n = min(n, len(s))
	bounds := make([]int, 0, n+1)
	bounds = append(bounds, 0)
	for j := 1; j < n; j++ {
		i := j * len(s) / n
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		if i > bounds[len(bounds)-1] && i < len(s) {
			bounds = append(bounds, i)
		}
	}
	return append(bounds, len(s))
}

// toolArguments returns deterministic JSON arguments for a function whose
// JSON schema is schema: each declared property gets a value of its type,
// strings the echo e.
func toolArguments(schema gjson.Result, e string) string {
	b := []byte{'{'}
	schema.Get("properties").ForEach(func(k, v gjson.Result) bool {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = appendString(b, k.String())
		b = append(b, ':')
		if enum := v.Get("enum.0"); enum.Exists() {
			b = append(b, enum.Raw...)
			return true
		}
		typ := v.Get("type")
		if typ.IsArray() {
			typ = typ.Get("0")
		}
		switch typ.String() {
		case "integer", "number":
			b = append(b, '1')
		case "boolean":
			b = append(b, "true"...)
		case "array":
			b = append(b, "[]"...)
		case "object":
			b = append(b, "{}"...)
		case "null":
			b = append(b, "null"...)
		default:
			b = appendString(b, e)
		}
		return true
	})
	return string(append(b, '}'))
}
