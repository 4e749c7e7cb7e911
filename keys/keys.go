// Package keys manages the gateway's API keys: "sk-air-" secrets drawn
// from a CSPRNG, stored only as SHA-256 hashes, owned by a user, with a
// short public id for listing, an optional expiry and revocation.
package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"path"
	"strings"
	"time"
)

// Prefix starts every API key.
const Prefix = "sk-air-"

// secretBytes is the entropy of a key: 32 bytes, 43 base64url characters.
const secretBytes = 32

// secretLen is the length of a full key, prefix included.
var secretLen = len(Prefix) + base64.RawURLEncoding.EncodedLen(secretBytes)

// Key is the stored description of an API key. It never holds the secret.
type Key struct {
	// ID is the short public identifier, e.g. "key_3f9a1c2b7d4e".
	ID string `json:"id"`
	// User owns the key; task lists and budgets are per user.
	User string `json:"user"`
	// Name is a free-form label.
	Name string `json:"name,omitempty"`
	// CreatedAt is when the key was created.
	CreatedAt time.Time `json:"created_at"`
	// ExpiresAt, if set, is when the key stops working.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// RevokedAt, if set, is when the key was revoked.
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
	// Models, if not empty, are the model ids and globs (path.Match
	// syntax, e.g. "claude-*") the key may use; empty means every model.
	Models []string `json:"models,omitempty"`
	// Tags are the key's default tags: the tags of its requests that send
	// no x-air-tags header.
	Tags []string `json:"tags,omitempty"`
	// LastUsedAt, if set, is when the key last authenticated a request. It
	// is recorded at most once a minute per key, so it may lag by that.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	// State is "active", "revoked" or "expired" when the key was listed;
	// empty on keys that Authenticate returns.
	State string `json:"state,omitempty"`
	// AllowIPs, if not empty, are the CIDRs from which the key may be
	// used (checked against Caddy's client_ip).
	AllowIPs []string `json:"allow_ips,omitempty"`
	// PreviousSecretUntil, if set, is when the secret the key had before
	// its last regenerate stops (or stopped) working.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	// LogRequests is set when the bodies of the key's requests are kept
	// (request logs); off by default.
	LogRequests bool `json:"log_requests,omitempty"`

	// hash is the hash of the key's current secret.
	hash string
	// allow are AllowIPs, parsed.
	allow []netip.Prefix
}

// Key states, as Key.State and StateAt report them.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
	StateExpired = "expired"
)

// StateAt is k's state at now.
func (k *Key) StateAt(now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return StateRevoked
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return StateExpired
	}
	return StateActive
}

// Allows reports whether k may use model: k names no models, or one of
// its models is model or a glob that matches it.
func (k *Key) Allows(model string) bool {
	if len(k.Models) == 0 {
		return true
	}
	for _, m := range k.Models {
		if m == model {
			return true
		}
		if ok, _ := path.Match(m, model); ok {
			return true
		}
	}
	return false
}

// checkModels validates the model ids and globs of a new key and returns
// them trimmed, without empty entries and duplicates.
func checkModels(models []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, m := range models {
		m = strings.TrimSpace(m)
		if m == "" || seen[m] {
			continue
		}
		if _, err := path.Match(m, ""); err != nil {
			return nil, fmt.Errorf("model %q: bad glob: %v", m, err)
		}
		seen[m] = true
		out = append(out, m)
	}
	return out, nil
}

// Active reports whether k authenticates requests at time now.
func (k *Key) Active(now time.Time) bool {
	if k.RevokedAt != nil {
		return false
	}
	return k.ExpiresAt == nil || now.Before(*k.ExpiresAt)
}

// Errors returned by Authenticate. Their texts are safe to show to clients.
var (
	ErrMissing   = errors.New("missing API key: send it as 'Authorization: Bearer sk-air-…'")
	ErrMalformed = errors.New("malformed API key: keys start with 'sk-air-'")
	ErrUnknown   = errors.New("invalid API key")
	ErrRevoked   = errors.New("this API key has been revoked")
	ErrExpired   = errors.New("this API key has expired")
)

// ErrModelNotAllowed is the error of a request for a model that its key's
// scope does not include; its text is safe to show to clients.
type ErrModelNotAllowed struct {
	// Model is the model asked for.
	Model string
}

// Error implements error.
func (e *ErrModelNotAllowed) Error() string {
	return fmt.Sprintf("this API key is not allowed to use the model '%s'", e.Model)
}

// newSecret returns a fresh key secret.
func newSecret() (string, error) {
	b := make([]byte, secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return Prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// newID returns a fresh public key id.
func newID() (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "key_" + hex.EncodeToString(b), nil
}

// Hash returns the hex SHA-256 of a secret, the only form in which keys are
// stored. A plain hash suffices: the secret carries 256 bits of entropy, so
// it cannot be guessed from its hash.
func Hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// WellFormed reports whether s looks like a key this gateway issues.
func WellFormed(s string) bool {
	if len(s) != secretLen || !strings.HasPrefix(s, Prefix) {
		return false
	}
	for _, c := range s[len(Prefix):] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
