package audit

import (
	"encoding/json"
	"regexp"
	"strings"
)

// secretFields are the JSON member names whose values are never stored,
// at any depth, compared without case.
var secretFields = map[string]bool{
	"key": true, "secret": true, "hash": true, "key_hash": true, "api_key": true, "apikey": true,
	"password": true, "token": true, "authorization": true, "api_keys": true, "keys": true,
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
			if secretFields[strings.ToLower(k)] {
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
		return secretText.ReplaceAllString(x, Redacted)
	}
	return v
}
