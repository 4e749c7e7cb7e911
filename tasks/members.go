package tasks

import (
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/caddy-air/caddy-air/apierror"
	"github.com/caddy-air/caddy-air/jsonlimit"
)

// member is a top-level member of a create body that the gateway reads,
// validates, edits or bills. Each must appear at most once: the gateway
// reads the first occurrence where the provider, like OpenAI's parser,
// would take the last, so a repeat would slip past validation and billing.
type member uint8

// The members the gateway reads.
const (
	memberModel member = iota
	memberPrompt
	memberNegativePrompt
	memberSize
	memberN
	memberSeed
	memberSeconds
	memberDuration
	memberResponseFormat
	numMembers
)

// memberNames spells each member.
var memberNames = [numMembers]string{
	memberModel:          "model",
	memberPrompt:         "prompt",
	memberNegativePrompt: "negative_prompt",
	memberSize:           "size",
	memberN:              "n",
	memberSeed:           "seed",
	memberSeconds:        "seconds",
	memberDuration:       "duration",
	memberResponseFormat: "response_format",
}

// maxMemberName is the length of the longest name in memberNames.
const maxMemberName = len("negative_prompt")

// MemberSet is a set of the members the gateway reads, one bit each: a
// fixed size whatever the body holds.
type MemberSet uint16

// has reports whether m is in s.
func (s MemberSet) has(m member) bool { return s&(1<<m) != 0 }

// with returns s and m.
func (s MemberSet) with(m member) MemberSet { return s | 1<<m }

// membersOf returns the set of ms.
func membersOf(ms ...member) MemberSet {
	var s MemberSet
	for _, m := range ms {
		s = s.with(m)
	}
	return s
}

var (
	// TaskMembers are the members of a POST /v1/tasks body the gateway
	// reads, validates, edits or bills.
	TaskMembers = membersOf(memberModel, memberPrompt, memberNegativePrompt, memberSize,
		memberN, memberSeed, memberSeconds, memberDuration)
	// ImagesMembers are those of a POST /v1/images/generations body:
	// TaskMembers and response_format.
	ImagesMembers = TaskMembers.with(memberResponseFormat)
)

// CheckUnique refuses a body, a JSON object nested at most maxDepth levels,
// in which a member of set appears more than once, with a 400 naming it.
// It holds no more than a MemberSet whatever the number of members. A body
// that is not a JSON object passes: the caller reports it.
func CheckUnique(body []byte, maxDepth int, set MemberSet) *apierror.Error {
	_, aerr := scanMembers(body, maxDepth, set, nil)
	return aerr
}

// fields holds the value of each member of memberNames at the top of a
// body, a Result that does not exist for one that is absent: a fixed size
// whatever the number of members.
type fields [numMembers]gjson.Result

// scanMembers reads the top-level members of body, a JSON object nested at
// most maxDepth levels, once, and refuses a repeat of one of set. Unless f
// is nil, it keeps in f the value of each member of memberNames, copied:
// body may be reused. It reports false for a body that is not a JSON
// object.
func scanMembers(body []byte, maxDepth int, set MemberSet, f *fields) (bool, *apierror.Error) {
	var s jsonlimit.Scanner
	s.Reset(body, jsonlimit.OrDefault(maxDepth))
	if t, err := s.Next(); err != nil || t.Kind != jsonlimit.BeginObject {
		return false, nil
	}
	var seen MemberSet
	for {
		k, err := s.Next()
		if err != nil {
			return false, nil
		}
		if k.Kind == jsonlimit.EndObject {
			t, err := s.Next()
			return err == nil && t.Kind == jsonlimit.Done, nil
		}
		v, err := s.Next()
		if err != nil {
			return false, nil
		}
		end, err := s.Skip(v)
		if err != nil {
			return false, nil
		}
		m, ok := lookupMember(body[k.Start:k.End])
		if !ok {
			continue
		}
		if seen.has(m) {
			if !set.has(m) {
				continue // the first counts, as for gjson
			}
			name := memberNames[m]
			return false, apierror.InvalidRequest(name, fmt.Sprintf("%q appears more than once in the request body", name))
		}
		seen = seen.with(m)
		if f != nil {
			f[m] = gjson.Parse(string(body[v.Start:end]))
		}
	}
}

// lookupMember returns the member a key token (quotes included) names,
// unescaping it as JSON does, without allocating.
func lookupMember(key []byte) (member, bool) {
	var buf [maxMemberName]byte
	name, ok := unescapeKey(key[1:len(key)-1], buf[:0])
	if !ok {
		return 0, false
	}
	for m, n := range memberNames {
		if string(name) == n {
			return member(m), true
		}
	}
	return 0, false
}

// unescapeKey appends the unescaped contents of a key to dst, which has
// room for maxMemberName bytes. It reports false for a key that cannot
// name a member: longer than that, or holding an escape that is not of an
// ASCII character (no member name holds another).
func unescapeKey(raw, dst []byte) ([]byte, bool) {
	for i := 0; i < len(raw); i++ {
		if len(dst) == cap(dst) {
			return nil, false
		}
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i+1 >= len(raw) {
			return nil, false
		}
		switch e := raw[i+1]; e {
		case 'u':
			if i+6 > len(raw) {
				return nil, false
			}
			r, ok := hex4(raw[i+2 : i+6])
			if !ok || r >= 0x80 {
				return nil, false
			}
			dst = append(dst, byte(r))
			i += 5
		case '"', '\\', '/':
			dst = append(dst, e)
			i++
		default: // \b \f \n \r \t: in no member name
			return nil, false
		}
	}
	return dst, true
}

// hex4 decodes four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	var r rune
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
