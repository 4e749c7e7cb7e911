package jsonview

// Member returns the raw value of member key of the JSON object obj (as
// gjson.Result.Raw holds one), a view of obj, without unescaping it as a
// gjson lookup of a string does. Keys are compared as written, so key
// must need no escapes. It reports false if obj is not an object or has
// no such member; with several, the first is returned (the gateway
// refuses repeated members before a body gets here).
func Member(obj, key string) (string, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return "", false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return "", false
		}
		kEnd := skipString(obj, i)
		k := obj[i:kEnd]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return "", false
		}
		i = skipSpace(obj, i+1)
		vEnd := skipValue(obj, i)
		if vEnd <= i {
			return "", false
		}
		if len(k) == len(key)+2 && k[1:len(k)-1] == key {
			return obj[i:vEnd], true
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return "", false
		}
		i++
	}
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string token starting at i.
func skipString(s string, i int) int {
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(s)
}

// skipValue returns the index after the value starting at i.
func skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return skipString(s, i)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				i = skipString(s, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(s)
	}
	for ; i < len(s); i++ {
		switch s[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
