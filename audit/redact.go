package audit

import (
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
)

// secretFields are the JSON member names whose values are never stored,
// at any depth, compared without case.
var secretFields = map[string]bool{
	"key": true, "secret": true, "hash": true, "key_hash": true, "api_key": true, "apikey": true,
	"password": true, "token": true, "authorization": true, "api_keys": true, "keys": true,
	"dsn": true,
}

// secretParts are parts of member names whose values are never stored
// (client_secret, db_password, private_key, aws_credentials…).
var secretParts = []string{"secret", "password", "passwd", "api_key", "apikey", "private_key", "credential"}

// isSecretName reports whether a member named k holds a secret.
func isSecretName(k string) bool {
	k = strings.ToLower(k)
	if secretFields[k] {
		return true
	}
	for _, p := range secretParts {
		if strings.Contains(k, p) {
			return true
		}
	}
	// session_token, access_token, refresh_token…; not counts such as
	// max_tokens.
	return strings.HasSuffix(k, "_token")
}

// Redacted replaces a secret's value.
const Redacted = "[redacted]"

// secretText matches strings that look like API keys (sk-…, also
// caddy-air's own) inside any string value.
var secretText = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{8,}`)

// Redact encodes v as JSON with the values of secret members replaced by
// Redacted and key-like strings masked; nil stays nil.
func Redact(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if string(b) == "null" {
		return nil, nil
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(redactValue(doc))
}

// redactValue redacts a decoded JSON value in place and returns it.
func redactValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if isSecretName(k) {
				x[k] = Redacted
				continue
			}
			x[k] = redactValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = redactValue(e)
		}
	case string:
		return secretText.ReplaceAllString(scrubURL(x), Redacted)
	}
	return v
}

// scrubURL drops the credentials and the query (where keys such as
// ?api-key= travel) of s if it is an http(s) URL.
func scrubURL(s string) string {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return Redacted
	}
	if u.User == nil && u.RawQuery == "" && u.Fragment == "" {
		return s
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	return u.String()
}

// SameJSON reports whether a and b encode the same JSON value (member
// order and spacing aside); two empty documents are the same.
func SameJSON(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}
