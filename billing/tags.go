package billing

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds of a request's tags (the x-air-tags header and keys' default
// tags).
const (
	// MaxTags is the most tags a request carries.
	MaxTags = 10
	// MaxTagLen is the longest tag, in bytes.
	MaxTagLen = 64
)

// TagsHeader is the request header that carries a request's tags.
const TagsHeader = "x-air-tags"

// ParseTags parses a comma-separated list of tags, such as the x-air-tags
// header "team-a, project:search". Each tag is trimmed of spaces; a tag is
// 1 to MaxTagLen bytes of ASCII letters, digits and "-_.:/@"; at most
// MaxTags tags, none repeated. An empty or all-blank list is nil. The
// error names the offending tag, for a 400.
func ParseTags(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
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
		if len(out) == MaxTags {
			return nil, fmt.Errorf("at most %d tags are allowed", MaxTags)
		}
		out = append(out, t)
	}
	return out, nil
}

// CheckTags checks a list of tags as ParseTags does (keys' default tags).
func CheckTags(tags []string) error {
	_, err := ParseTags(strings.Join(tags, ","))
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
	if len(t) > MaxTagLen {
		return fmt.Errorf("tag %.16q… is longer than %d bytes", t, MaxTagLen)
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
