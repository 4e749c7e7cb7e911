package jsonlimit

// Kind is the kind of a Token.
type Kind uint8

// The kinds of tokens.
const (
	// Done follows the last token of a valid text.
	Done Kind = iota
	// BeginObject is '{'.
	BeginObject
	// EndObject is '}'.
	EndObject
	// BeginArray is '['.
	BeginArray
	// EndArray is ']'.
	EndArray
	// Key is an object member's key, quotes included; its ':' is consumed.
	Key
	// String is a string value, quotes included.
	String
	// Number is a number.
	Number
	// True is the literal true.
	True
	// False is the literal false.
	False
	// Null is the literal null.
	Null
)

// Token is one token of a JSON text: its kind and its bytes, b[Start:End].
type Token struct {
	// Kind is what the token is.
	Kind Kind
	// Start and End delimit the token's bytes; for Done, both are the
	// text's length.
	Start, End int
}

// more states of Scanner, beside Check's: just inside a container, where
// it may close at once.
const (
	stateFirstKey   = stateAfter + 1 + iota // after '{': a key or '}'
	stateFirstValue                         // after '[': a value or ']'
)

// Scanner reads a JSON text token by token, in one forward pass, without
// recursion and without allocating (but for stacks deeper than 512
// levels). It accepts and rejects exactly what Check does, with the same
// errors: a caller that reads every token up to Done has validated the
// text, and one that stops early has read only what it needed. Its zero
// value is not usable: call Reset.
type Scanner struct {
	b        []byte
	i        int
	depth    int
	maxDepth int
	state    int
	err      error
	// inline is the stack of the first levels, one bit per open
	// container, set for an object; more holds the deeper levels.
	inline [inlineWords]uint64
	more   []uint64
}

// Reset starts the scan of b with the nesting limit maxDepth, as Check's.
func (s *Scanner) Reset(b []byte, maxDepth int) {
	*s = Scanner{b: b, maxDepth: maxDepth, more: s.more[:0]}
}

// Depth returns how many containers are open.
func (s *Scanner) Depth() int { return s.depth }

// Err returns the error that stopped the scan, or nil.
func (s *Scanner) Err() error { return s.err }

// fail records err, which every later call returns.
func (s *Scanner) fail(err error) (Token, error) {
	s.err = err
	return Token{}, err
}

// push opens a container at the next level; object tells its kind.
func (s *Scanner) push(object bool) {
	w, bit := s.depth>>6, uint64(1)<<(s.depth&63)
	word := &s.inline[0]
	if w < inlineWords {
		word = &s.inline[w]
	} else {
		if w-inlineWords == len(s.more) {
			s.more = append(s.more, 0)
		}
		word = &s.more[w-inlineWords]
	}
	if object {
		*word |= bit
	} else {
		*word &^= bit
	}
	s.depth++
}

// inObject reports whether the innermost open container is an object.
func (s *Scanner) inObject() bool {
	d := s.depth - 1
	w := s.inline[0]
	if d>>6 < inlineWords {
		w = s.inline[d>>6]
	} else {
		w = s.more[d>>6-inlineWords]
	}
	return w&(1<<(d&63)) != 0
}

// Next returns the next token; Done once the text ended validly, and then
// again on every call. The error is a *DepthError or a *SyntaxError, the
// one Check returns for the text; it is returned again on every later
// call.
func (s *Scanner) Next() (Token, error) {
	if s.err != nil {
		return Token{}, s.err
	}
	b := s.b
	for {
		i := skipSpace(b, s.i)
		if i >= len(b) {
			if s.state == stateAfter && s.depth == 0 {
				s.i = i
				return Token{Kind: Done, Start: i, End: i}, nil
			}
			return s.fail(&SyntaxError{Offset: i})
		}
		c := b[i]
		switch s.state {
		case stateFirstValue:
			if c == ']' {
				s.depth--
				s.i, s.state = i+1, stateAfter
				return Token{Kind: EndArray, Start: i, End: i + 1}, nil
			}
			fallthrough
		case stateValue:
			return s.value(b, i, c)
		case stateFirstKey:
			if c == '}' {
				s.depth--
				s.i, s.state = i+1, stateAfter
				return Token{Kind: EndObject, Start: i, End: i + 1}, nil
			}
			fallthrough
		case stateKey:
			if c != '"' {
				return s.fail(&SyntaxError{Offset: i})
			}
			e := stringEnd(b, i+1)
			if e < 0 {
				return s.fail(&SyntaxError{Offset: ^e})
			}
			j := skipSpace(b, e)
			if j >= len(b) || b[j] != ':' {
				return s.fail(&SyntaxError{Offset: j})
			}
			s.i, s.state = j+1, stateValue
			return Token{Kind: Key, Start: i, End: e}, nil
		default: // stateAfter
			if s.depth == 0 {
				return s.fail(&SyntaxError{Offset: i}) // trailing bytes
			}
			object := s.inObject()
			switch {
			case c == ',' && object:
				s.i, s.state = i+1, stateKey
			case c == ',':
				s.i, s.state = i+1, stateValue
			case c == '}' && object:
				s.depth--
				s.i = i + 1
				return Token{Kind: EndObject, Start: i, End: i + 1}, nil
			case c == ']' && !object:
				s.depth--
				s.i = i + 1
				return Token{Kind: EndArray, Start: i, End: i + 1}, nil
			default:
				return s.fail(&SyntaxError{Offset: i})
			}
		}
	}
}

// value reads the value that starts with c at b[i].
func (s *Scanner) value(b []byte, i int, c byte) (Token, error) {
	var kind Kind
	var e int
	switch {
	case c == '{' || c == '[':
		if s.depth >= s.maxDepth {
			return s.fail(&DepthError{Limit: s.maxDepth, Offset: i})
		}
		s.push(c == '{')
		s.i = i + 1
		if c == '{' {
			s.state = stateFirstKey
			return Token{Kind: BeginObject, Start: i, End: i + 1}, nil
		}
		s.state = stateFirstValue
		return Token{Kind: BeginArray, Start: i, End: i + 1}, nil
	case c == '"':
		kind, e = String, stringEnd(b, i+1)
	case c == '-' || c-'0' < 10:
		kind, e = Number, numberEnd(b, i)
	case c == 't':
		kind, e = True, literalEnd(b, i, "true")
	case c == 'f':
		kind, e = False, literalEnd(b, i, "false")
	case c == 'n':
		kind, e = Null, literalEnd(b, i, "null")
	default:
		return s.fail(&SyntaxError{Offset: i})
	}
	if e < 0 {
		return s.fail(&SyntaxError{Offset: ^e})
	}
	s.i, s.state = e, stateAfter
	return Token{Kind: kind, Start: i, End: e}, nil
}

// Skip reads the rest of the value whose first token t was just returned
// by Next and returns the index past it: t.End for a scalar, past the
// closing bracket for a container.
func (s *Scanner) Skip(t Token) (int, error) {
	if t.Kind != BeginObject && t.Kind != BeginArray {
		return t.End, s.err
	}
	depth := s.depth - 1
	for {
		u, err := s.Next()
		if err != nil {
			return 0, err
		}
		if (u.Kind == EndObject || u.Kind == EndArray) && s.depth == depth {
			return u.End, nil
		}
	}
}
