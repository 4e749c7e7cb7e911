package integration

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
)

// signIn asks for the console's home page as user from ip (as the
// trusted proxy's X-Forwarded-For says) and returns the status and
// Retry-After.
func signIn(t *testing.T, ip, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, baseURL+"/console/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, password)
	req.Header.Set("X-Forwarded-For", ip)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// Failed console sign-ins are limited per client IP (5 a minute) and per
// user name (10 a minute), as Caddyfile.example sets them: past the limit
// a sign-in gets 429 with Retry-After before its password is checked (the
// right password too), while other IPs and users, and signed-in users,
// are not slowed.
func TestSignInLimit(t *testing.T) {
	startGateway(t, gatewayOptions{
		Global: "servers {\n\t\ttrusted_proxies static 127.0.0.1/8\n\t}",
		Site:   consoleSite,
	})
	// A signed-in user's requests never count.
	for i := range 12 {
		if status, _ := signIn(t, "198.51.100.1", demoUser, demoPassword); status != http.StatusOK {
			t.Fatalf("signed-in request %d: %d", i, status)
		}
	}
	// Per IP: 5 failures with any names, then 429, the right password too.
	for i := range 5 {
		if status, _ := signIn(t, "203.0.113.7", fmt.Sprint("guess", i), "wrong"); status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d, want 401", i, status)
		}
	}
	status, retry := signIn(t, "203.0.113.7", demoUser, demoPassword)
	if n, _ := strconv.Atoi(retry); status != http.StatusTooManyRequests || n < 1 || n > 12 {
		t.Errorf("the sixth sign-in from one IP: %d, Retry-After %q; want 429 within 12 s", status, retry)
	}
	if status, _ := signIn(t, "203.0.113.8", demoUser, demoPassword); status != http.StatusOK {
		t.Errorf("another IP: %d, want 200", status)
	}
	// Per user: 10 failures from 10 IPs, then the name waits, from any IP.
	for i := range 10 {
		if status, _ := signIn(t, fmt.Sprint("192.0.2.", i+1), adminUser, "wrong"); status != http.StatusUnauthorized {
			t.Fatalf("admin failure %d: %d, want 401", i, status)
		}
	}
	if status, retry := signIn(t, "192.0.2.200", adminUser, adminPassword); status != http.StatusTooManyRequests || retry == "" {
		t.Errorf("admin after 10 failures: %d, Retry-After %q; want 429", status, retry)
	}
	if status, _ := signIn(t, "192.0.2.200", demoUser, demoPassword); status != http.StatusOK {
		t.Errorf("demo from the same IP: %d, want 200", status)
	}
}
