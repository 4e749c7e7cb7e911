package integration

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tidwall/gjson"
)

// requestLog is GET /air/request-logs/<id>'s answer.
type requestLog struct {
	RequestID         string `json:"request_id"`
	KeyID             string `json:"key_id"`
	User              string `json:"user"`
	Request           string `json:"request"`
	Response          string `json:"response"`
	RequestTruncated  bool   `json:"request_truncated"`
	ResponseTruncated bool   `json:"response_truncated"`
}

// TestRequestLogs: a chat request of a key with log_requests on leaves a
// log under its ledger record's id (the request as sent, the streamed
// answer reassembled, credentials redacted); one of a key with logging
// off leaves none. No file of the Badger directory holds the key's secret
// or a credential planted in the prompt.
func TestRequestLogs(t *testing.T) {
	g := startGateway(t, recOptions(cannedUpstream(t)))
	onKey, onID := createKey(t, "logged")
	offKey, _ := createKey(t, "unlogged")
	var patched struct {
		LogRequests bool `json:"log_requests"`
	}
	if status := adminJSON(t, http.MethodPatch, "/air/keys/"+onID, `{"log_requests":true}`, &patched); status != http.StatusOK || !patched.LogRequests {
		t.Fatalf("PATCH log_requests: %d %+v", status, patched)
	}
	const planted = "sk-proj-PLANTEDsecret0123456789"
	chat := `{"model":"rec-model","messages":[{"role":"user","content":"zebra-marker-42 my key is ` + planted + `"}]}`
	status, hdr, raw := postChat(t, onKey, chat)
	if status != http.StatusOK {
		t.Fatalf("logged chat: %d %s", status, raw)
	}
	onReq := hdr.Get("X-Request-Id")
	stream := `{"model":"rec-model","stream":true,"messages":[{"role":"user","content":"zebra-stream"}]}`
	status, hdr, raw = postChat(t, onKey, stream)
	if status != http.StatusOK {
		t.Fatalf("logged stream: %d %s", status, raw)
	}
	streamReq := hdr.Get("X-Request-Id")
	status, hdr, raw = postChat(t, offKey, chat)
	if status != http.StatusOK {
		t.Fatalf("unlogged chat: %d %s", status, raw)
	}
	offReq := hdr.Get("X-Request-Id")
	// A team's switch covers its members' keys.
	memberKey, _ := createKey(t, "member")
	if status := adminJSON(t, http.MethodPost, "/air/teams", `{"name":"logteam"}`, nil); status != http.StatusCreated {
		t.Fatalf("creating the team: %d", status)
	}
	if status := adminJSON(t, http.MethodPut, "/air/teams/logteam/members/member", "", nil); status != http.StatusOK {
		t.Fatalf("adding the member: %d", status)
	}
	var team struct {
		LogRequests bool `json:"log_requests"`
	}
	if status := adminJSON(t, http.MethodPatch, "/air/teams/logteam", `{"log_requests":true}`, &team); status != http.StatusOK || !team.LogRequests {
		t.Fatalf("PATCH the team's log_requests: %d %+v", status, team)
	}
	status, hdr, raw = postChat(t, memberKey, `{"model":"rec-model","messages":[{"role":"user","content":"team-marker"}]}`)
	if status != http.StatusOK {
		t.Fatalf("team member's chat: %d %s", status, raw)
	}
	teamReq := hdr.Get("X-Request-Id")
	// The logs are stored in order, in the background: once a later one
	// is there, an earlier one would be too.
	status, _, _ = postChat(t, onKey, `{"model":"rec-model","messages":[{"role":"user","content":"last"}]}`)
	if status != http.StatusOK {
		t.Fatalf("last chat: %d", status)
	}
	recs := waitLedger(t, "logged", 3)
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.ID] = true
	}
	if !ids[onReq] || !ids[streamReq] {
		t.Fatalf("ledger ids %v lack %s or %s", ids, onReq, streamReq)
	}
	last := recs[0].ID
	for _, r := range recs {
		if r.ID != onReq && r.ID != streamReq {
			last = r.ID
		}
	}
	var l requestLog
	eventually(t, 10*time.Second, "the last request's log", func() bool {
		return adminJSON(t, http.MethodGet, "/air/request-logs/"+last, "", &l) == http.StatusOK
	})
	if status := adminJSON(t, http.MethodGet, "/air/request-logs/"+onReq, "", &l); status != http.StatusOK {
		t.Fatalf("log of %s: %d", onReq, status)
	}
	if l.RequestID != onReq || l.KeyID != onID || l.User != "logged" || !strings.Contains(l.Request, "zebra-marker-42") ||
		strings.Contains(l.Request, "PLANTED") || !strings.Contains(l.Request, "[redacted]") ||
		!gjson.Valid(l.Response) || gjson.Get(l.Response, "object").String() != "chat.completion" || l.RequestTruncated || l.ResponseTruncated {
		t.Errorf("log of the chat: %+v", l)
	}
	if status := adminJSON(t, http.MethodGet, "/air/request-logs/"+streamReq, "", &l); status != http.StatusOK {
		t.Fatalf("log of the stream %s: %d", streamReq, status)
	}
	if !gjson.Get(l.Response, "stream").Bool() || gjson.Get(l.Response, "content").String() == "" || strings.Contains(l.Response, "data:") {
		t.Errorf("the stream's log is not reassembled: %s", l.Response)
	}
	if status := adminJSON(t, http.MethodGet, "/air/request-logs/"+teamReq, "", &l); status != http.StatusOK || !strings.Contains(l.Request, "team-marker") {
		t.Errorf("the team member's request: %d %+v, want its log", status, l)
	}
	if offReq == "" || !ledgerHas(t, "unlogged", offReq) {
		t.Fatalf("the unlogged request %q has no ledger record", offReq)
	}
	if status := adminJSON(t, http.MethodGet, "/air/request-logs/"+offReq, "", nil); status != http.StatusNotFound {
		t.Errorf("a request of a key with logging off: %d, want 404", status)
	}

	// The CLI switches it off again.
	if out, err := exec.Command(caddyBin, "air", "keys", "log-requests", onID, "off", "--address", adminAddr).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "request logs of key "+onID+": off") {
		t.Fatalf("caddy air keys log-requests off: %v %s", err, out)
	}
	var listed []struct {
		ID          string `json:"id"`
		LogRequests bool   `json:"log_requests"`
	}
	adminJSON(t, http.MethodGet, "/air/keys?user=logged", "", &listed)
	if len(listed) != 1 || listed[0].ID != onID || listed[0].LogRequests {
		t.Errorf("after the CLI switched it off: %+v", listed)
	}

	// No secret in any file of the store; the logs themselves are there
	// (else the check proves nothing).
	var files []byte
	err := filepath.Walk(g.dataDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, data...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(files), "zebra-marker-42") {
		t.Fatal("the logs are not in the files read: the check would prove nothing")
	}
	for _, s := range []string{onKey[len("sk-air-"):], offKey[len("sk-air-"):], "PLANTEDsecret0123456789"} {
		if strings.Contains(string(files), s) {
			t.Errorf("the store's files hold the secret %.12s…", s)
		}
	}
}

// ledgerHas reports whether user's ledger has record id.
func ledgerHas(t *testing.T, user, id string) bool {
	t.Helper()
	for _, r := range ledgerOf(t, user) {
		if r.ID == id {
			return true
		}
	}
	return false
}

// TestRequestLogsConsole: the console shows a stored request log to the
// key's owner, the admin of the owner's team and operators, each ledger
// row of the owner's Usage page and of the operators' ledger linking to
// it; another user and another team's admin get 404, as for a record
// without a log.
func TestRequestLogsConsole(t *testing.T) {
	startGateway(t, gatewayOptions{Site: teamConsoleSite(t)})
	secret, id := createKey(t, "member-a")
	for _, step := range []struct{ method, path, body string }{
		{http.MethodPost, "/air/teams", `{"name":"alpha"}`},
		{http.MethodPost, "/air/teams", `{"name":"beta"}`},
		{http.MethodPut, "/air/teams/alpha/members/lead-a", `{"admin":true}`},
		{http.MethodPut, "/air/teams/alpha/members/member-a", ``},
		{http.MethodPut, "/air/teams/beta/members/lead-b", `{"admin":true}`},
		{http.MethodPut, "/air/teams/beta/members/member-b", ``},
		{http.MethodPatch, "/air/keys/" + id, `{"log_requests":true}`},
	} {
		if st := adminJSON(t, step.method, step.path, step.body, nil); st >= 300 {
			t.Fatalf("%s %s: %d", step.method, step.path, st)
		}
	}
	st, hdr, body := call(t, http.MethodPost, "/v1/chat/completions", secret, `{"model":"mock-gpt","messages":[{"role":"user","content":"console-marker"}]}`)
	if st != http.StatusOK {
		t.Fatalf("chat: %d %s", st, body)
	}
	req := hdr.Get("X-Request-Id")
	waitLedger(t, "member-a", 1)
	eventually(t, 10*time.Second, "the request's log", func() bool {
		return adminJSON(t, http.MethodGet, "/air/request-logs/"+req, "", nil) == http.StatusOK
	})
	link := `href="/console/request-logs/` + req + `"`
	for i, tc := range []struct {
		user, page string
		want       int
		has        string
	}{
		{"member-a", "/console/request-logs/" + req, http.StatusOK, "console-marker"},
		{"lead-a", "/console/request-logs/" + req, http.StatusOK, "console-marker"},
		{"ops", "/console/request-logs/" + req, http.StatusOK, "console-marker"},
		{"member-b", "/console/request-logs/" + req, http.StatusNotFound, ""},
		{"lead-b", "/console/request-logs/" + req, http.StatusNotFound, ""},
		{"member-a", "/console/request-logs/req_nosuchrecord", http.StatusNotFound, ""},
		{"member-a", "/console/usage", http.StatusOK, link},
		{"ops", "/console/operators/ledger?user=member-a", http.StatusOK, link},
	} {
		st, _, body := call(t, http.MethodGet, tc.page, "", "", asUser(tc.user)...)
		if st != tc.want || !strings.Contains(string(body), tc.has) {
			t.Errorf("Test %d: %s opens %s: %d (has %q: %v), want %d", i, tc.user, tc.page, st, tc.has, strings.Contains(string(body), tc.has), tc.want)
		}
		if st == http.StatusNotFound && strings.Contains(string(body), "console-marker") {
			t.Errorf("Test %d: the 404 shows the log", i)
		}
	}
	// In Chromium: the owner follows the link of the ledger row on the
	// Usage page to the log.
	b := newBrowser(t)
	tab := b.tab("member-a", "member-a-pw")
	b.run(tab, chromedp.Navigate(baseURL+"/console/usage"),
		chromedp.Click(`tr[data-request-id="`+req+`"] a.reqlog`, chromedp.ByQuery))
	if got := waitText(tab, "#request-log-request", "console-marker"); !strings.Contains(got, "console-marker") {
		t.Errorf("the owner's request-log page after following the link shows %q", got)
	}
	if got := waitText(tab, "#request-log-id", req); got != req {
		t.Errorf("the page names request %q, want %s", got, req)
	}
	b.screenshot(tab, "request-log")
}

// TestRequestLogBounds: the request_logs block's bounds apply: bodies
// are cut at max_body and marked truncated, its redact patterns are
// redacted besides the built-in ones, and a log is gone once its ttl has
// passed.
func TestRequestLogBounds(t *testing.T) {
	startGateway(t, gatewayOptions{
		Providers: recOptions(cannedUpstream(t)).Providers, Models: recOptions().Models,
		Extra: "request_logs {\n\t\t\tmax_body 200B\n\t\t\tttl 2s\n\t\t\tredact acct-[0-9]{6}\n\t\t}",
	})
	secret, id := createKey(t, "bounded")
	if status := adminJSON(t, http.MethodPatch, "/air/keys/"+id, `{"log_requests":true}`, nil); status != http.StatusOK {
		t.Fatalf("PATCH: %d", status)
	}
	status, hdr, raw := postChat(t, secret, `{"model":"rec-model","messages":[{"role":"user","content":"account acct-123456 `+strings.Repeat("x", 1000)+`"}]}`)
	if status != http.StatusOK {
		t.Fatalf("chat: %d %s", status, raw)
	}
	req := hdr.Get("X-Request-Id")
	var l requestLog
	eventually(t, 10*time.Second, "the log", func() bool {
		return adminJSON(t, http.MethodGet, "/air/request-logs/"+req, "", &l) == http.StatusOK
	})
	if !l.RequestTruncated || len(l.Request) > 200 || !strings.Contains(l.Request, "account [redacted]") || strings.Contains(l.Request, "123456") ||
		!l.ResponseTruncated || len(l.Response) > 200 {
		t.Errorf("log under max_body 200B: request %d bytes (truncated %v) %q, response %d bytes (truncated %v)",
			len(l.Request), l.RequestTruncated, l.Request, len(l.Response), l.ResponseTruncated)
	}
	eventually(t, 15*time.Second, "the log's expiry", func() bool {
		return adminJSON(t, http.MethodGet, "/air/request-logs/"+req, "", nil) == http.StatusNotFound
	})
}
