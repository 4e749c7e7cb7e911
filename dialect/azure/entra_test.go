package azure

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// entraFront is a fake Entra ID (over TLS, as azidentity requires of an
// authority) and a fake Azure resource that takes its tokens and no key.
func entraFront(t *testing.T, ttl time.Duration) (*EntraServer, *httptest.Server, *httptest.Server) {
	e := &EntraServer{TenantID: "tenant-1", ClientID: "app-1", ClientSecret: "s3cret-value", Header: "id-header", TTL: ttl}
	auth := httptest.NewTLSServer(e)
	t.Cleanup(auth.Close)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get(APIKeyHeader) != "" {
			t.Errorf("the front passed credentials on: %v", r.Header)
		}
		io.WriteString(w, `{"ok":true}`)
	})
	res := httptest.NewServer(&Front{Bearer: e.Valid, Next: next})
	t.Cleanup(res.Close)
	return e, auth, res
}

// send posts a chat request through an endpoint with tokens.
func send(t *testing.T, tokens *Tokens, url string) (int, string, error) {
	t.Helper()
	ep := &Endpoint{URL: url, Tokens: tokens, Key: "never-sent"}
	req, err := ep.NewRequest(context.Background(), "gpt-4o-prod", false, []byte(`{"messages":[]}`))
	if err != nil {
		return 0, "", err
	}
	if req.Header.Get(APIKeyHeader) != "" || !strings.HasPrefix(req.Header.Get("Authorization"), "Bearer entra-") {
		t.Fatalf("request headers %v", req.Header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// TestEntraClientSecret: a client secret gets a token from the authority,
// cached across requests, which the resource accepts; a wrong secret
// fails the request before it is sent, without the secret in the error.
func TestEntraClientSecret(t *testing.T) {
	e, auth, res := entraFront(t, time.Hour)
	o := EntraOptions{TenantID: "tenant-1", ClientID: "app-1", ClientSecret: "s3cret-value", AuthorityHost: auth.URL, Transport: auth.Client()}
	tokens, err := NewTokens(o)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if status, body, err := send(t, tokens, res.URL); err != nil || status != 200 || body != `{"ok":true}` {
			t.Fatalf("%d %s %v", status, body, err)
		}
	}
	if n := e.Granted.Load(); n != 1 {
		t.Errorf("%d tokens granted for 3 requests, want 1 (cached)", n)
	}
	o.ClientSecret = "wrong-secret-value"
	bad, err := NewTokens(o)
	if err != nil {
		t.Fatal(err)
	}
	ep := &Endpoint{URL: res.URL, Tokens: bad}
	_, err = ep.NewRequest(context.Background(), "gpt-4o-prod", false, nil)
	if err == nil || strings.Contains(err.Error(), "wrong-secret-value") || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "Entra ID token") {
		t.Errorf("a wrong secret: %v", err)
	}
	// A key alone, or a forged token, is refused by a resource that
	// takes tokens only.
	req, _ := http.NewRequest(http.MethodPost, DeploymentURL(res.URL, "d", "chat/completions", ""), nil)
	req.Header.Set("Authorization", "Bearer entra-forged")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("a forged token: %v %v", resp, err)
	}
}

// An expired token is asked for anew.
func TestEntraTokenRefreshed(t *testing.T) {
	e, auth, res := entraFront(t, time.Second)
	tokens, err := NewTokens(EntraOptions{TenantID: "tenant-1", ClientID: "app-1", ClientSecret: "s3cret-value", AuthorityHost: auth.URL, Transport: auth.Client()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if status, _, err := send(t, tokens, res.URL); err != nil || status != 200 {
			t.Fatalf("request %d: %d %v", i, status, err)
		}
		time.Sleep(1100 * time.Millisecond)
	}
	if n := e.Granted.Load(); n != 2 {
		t.Errorf("%d tokens granted, want 2 (the first expired)", n)
	}
}

// TestEntraManagedIdentity takes App Service's managed identity tokens,
// a user-assigned identity's client id passed on.
func TestEntraManagedIdentity(t *testing.T) {
	e, _, res := entraFront(t, time.Hour)
	var gotClient string
	msi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotClient = r.URL.Query().Get("client_id")
		e.ServeHTTP(w, r)
	}))
	defer msi.Close()
	t.Setenv("IDENTITY_ENDPOINT", msi.URL+"/msi/token")
	t.Setenv("IDENTITY_HEADER", "id-header")
	tokens, err := NewTokens(EntraOptions{ManagedIdentity: true, ClientID: "uami-7"})
	if err != nil {
		t.Fatal(err)
	}
	if status, _, err := send(t, tokens, res.URL); err != nil || status != 200 || gotClient != "uami-7" {
		t.Fatalf("%d %v, client id %q", status, err, gotClient)
	}
	t.Setenv("IDENTITY_HEADER", "wrong")
	tokens, _ = NewTokens(EntraOptions{ManagedIdentity: true})
	if _, err := (&Endpoint{URL: res.URL, Tokens: tokens}).NewRequest(context.Background(), "d", false, nil); err == nil {
		t.Error("a refused managed identity request made a request")
	}
}

func TestEntraOptionsChecked(t *testing.T) {
	for i, o := range []EntraOptions{
		{TenantID: "t", ClientID: "c"},
		{ClientID: "c", ClientSecret: "s"},
		{TenantID: "t", ClientID: "c", ClientSecret: "s", AuthorityHost: "http://login.example"},
		{ManagedIdentity: true, ClientSecret: "s"},
		{ManagedIdentity: true, TenantID: "t"},
	} {
		if _, err := NewTokens(o); err == nil {
			t.Errorf("Test %d: %+v accepted", i, o)
		}
	}
}
