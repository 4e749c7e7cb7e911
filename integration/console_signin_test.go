package integration

import (
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
)

// TestConsoleSignInPage: a browser without credentials gets basic_auth's
// challenge and, behind it (shown when the user cancels the prompt), the
// console's sign-in page rather than an empty page; its stylesheet loads
// without credentials, and no data shows.
func TestConsoleSignInPage(t *testing.T) {
	startGateway(t, gatewayOptions{Site: consoleSite})
	resp, err := http.Get(baseURL + "/console/keys")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("status %d, WWW-Authenticate %q: want basic_auth's challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if !strings.Contains(string(body), `id="sign-in-needed"`) || strings.Contains(string(body), "<nav") {
		t.Errorf("the 401 page is not the console's sign-in page:\n%s", body)
	}
	if ct := resp.Header.Get("Content-Security-Policy"); ct == "" {
		t.Error("the sign-in page has no Content-Security-Policy")
	}
	css, err := http.Get(baseURL + "/console/static/console.css")
	if err != nil {
		t.Fatal(err)
	}
	css.Body.Close()
	if css.StatusCode != http.StatusOK || !strings.HasPrefix(css.Header.Get("Content-Type"), "text/css") {
		t.Errorf("the sign-in page's stylesheet: %d %s", css.StatusCode, css.Header.Get("Content-Type"))
	}
}

// TestConsoleSignInPageLeavesAPIErrorsAlone: the handle_errors 401 route
// of the console writes nothing for the API's 401s, so their JSON stays
// and the connection is kept alive for the next request.
func TestConsoleSignInPageLeavesAPIErrorsAlone(t *testing.T) {
	startGateway(t, gatewayOptions{Site: consoleSite})
	client := &http.Client{}
	var reused []bool
	for range 2 {
		req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/chat/completions", strings.NewReader(`{"model":"mock-gpt","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer sk-air-wrong")
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) },
		}))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), `"invalid_api_key"`) || strings.Contains(string(body), "sign-in-needed") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
	}
	if len(reused) != 2 || !reused[1] {
		t.Errorf("the second request did not reuse the connection: %v", reused)
	}
}
