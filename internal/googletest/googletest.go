// Package googletest writes Google service-account key files for tests:
// the credentials that the vertex provider, the fake Vertex AI and its
// token endpoint read.
package googletest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// Account names a service account.
type Account struct {
	// Email is its client_email, Project its project_id and TokenURI its
	// token_uri, where its tokens are asked for.
	Email, Project, TokenURI string
}

// NewKey returns a new 2048-bit RSA key, failing t if none can be made.
func NewKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// KeyJSON returns the key file of a, whose private key is k.
func KeyJSON(t testing.TB, k *rsa.PrivateKey, a Account) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]string{
		"type": "service_account", "project_id": a.Project, "private_key_id": "kid-1",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": a.Email, "client_id": "1234567890", "token_uri": a.TokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// KeyFile writes the key file of a, whose private key is k, in t's
// temporary directory, readable by its owner only, and returns its path.
func KeyFile(t testing.TB, k *rsa.PrivateKey, a Account) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, KeyJSON(t, k, a), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
