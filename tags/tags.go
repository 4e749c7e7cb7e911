// Package tags parses and checks the tags that label a request in the
// ledger: the x-air-tags header, and API keys' default tags.
package tags

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds of a request's tags (the x-air-tags header and keys' default
// tags).
const (
	// Max is the most tags a request carries.
	Max = 10
	// MaxLen is the longest tag, in bytes.
	MaxLen = 64
)

// Header is the request header that carries a request's tags.
const Header = "x-air-tags"

// Parse parses a comma-separated list of tags, such as the x-air-tags
// header "team-a, project:search". Each tag is trimmed of spaces; a tag is
// 1 to MaxLen bytes of ASCII letters, digits and "-_.:/@"; at most
// Max tags, none repeated. An empty or all-blank list is nil. The
// error names the offending tag, for a 400.
func Parse(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := make([]string, 0, min(strings.Count(s, ",")+1, Max+1))
	for raw := range strings.SplitSeq(s, ",") {
		t := strings.TrimSpace(raw)
		if err := checkTag(t); err != nil {
			return nil, err
		}
		for _, o := range out {
			if o == t {
				return nil, fmt.Errorf("tag %q is repeated", t)
			}
		}
		if len(out) == Max {
			return nil, fmt.Errorf("at most %d tags are allowed", Max)
		}
		out = append(out, t)
	}
	return out, nil
}

// Check checks a list of tags as Parse does (keys' default tags).
func Check(tags []string) error {
	_, err := Parse(strings.Join(tags, ","))
	for _, t := range tags {
		if strings.Contains(t, ",") {
			return fmt.Errorf("tag %q: must not contain a comma", t)
		}
	}
	return err
}

// checkTag checks one trimmed tag.
func checkTag(t string) error {
	if t == "" {
		return errors.New("a tag is empty (two commas in a row, or a trailing comma)")
	}
	if len(t) > MaxLen {
		return fmt.Errorf("tag %.16q… is longer than %d bytes", t, MaxLen)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:/@", c) >= 0 {
			continue
		}
		return fmt.Errorf("tag %q: only letters, digits and - _ . : / @ are allowed", t)
	}
	return nil
}
