package tasks

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"

	"github.com/caddy-air/caddy-air/providers"
)

func TestPublicAddr(t *testing.T) {
	for i, c := range []struct {
		ip     string
		public bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"93.184.216.34", true},
		{"2606:4700::1111", true},
		{"2a00:1450:4001:80b::200e", true},
		{"::ffff:8.8.8.8", true},
		{"127.0.0.1", false},
		{"127.1.2.3", false},
		{"::1", false},
		{"::ffff:127.0.0.1", false},
		{"10.0.0.1", false},
		{"172.16.5.4", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"::ffff:192.168.1.1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"169.254.169.254", false},
		{"fe80::1", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"::", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"ff02::1", false},
		{"255.255.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"100.128.0.1", true},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"240.0.0.1", false},
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"2002:a9fe:a9fe::1", false},  // 6to4 of 169.254.169.254
		{"2001:db8::1", false},
		{"2001::1", false},
		{"fec0::1", false},
		{"::7f00:1", false}, // IPv4-compatible 127.0.0.1
	} {
		if got := publicAddr(netip.MustParseAddr(c.ip)); got != c.public {
			t.Errorf("Test %d: publicAddr(%s) = %v, want %v", i, c.ip, got, c.public)
		}
	}
}

func TestNewFetchGuard(t *testing.T) {
	for i, c := range []struct {
		allow []string
		ok    bool
	}{
		{nil, true},
		{[]string{"10.1.0.0/16", "192.168.7.7", "fd00::/8", "media.internal:9000", "[fd00::1]:443"}, true},
		{[]string{"media.internal"}, false},
		{[]string{"10.1.0.0/33"}, false},
		{[]string{":9000"}, false},
	} {
		if _, err := newFetchGuard(c.allow); (err == nil) != c.ok {
			t.Errorf("Test %d: newFetchGuard(%q) = %v, want ok %v", i, c.allow, err, c.ok)
		}
	}
}

// witness is a loopback server that is not the provider: it records
// the credentials of every request it gets, and answers with next, or
// else with a PNG.
type witness struct {
	*httptest.Server
	mu   sync.Mutex
	auth []string // the Authorization and Api-Key of each request
}

func newWitness(t *testing.T, next http.HandlerFunc) *witness {
	w := &witness{}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.auth = append(w.auth, r.Header.Get("Authorization")+r.Header.Get("Api-Key"))
		w.mu.Unlock()
		if next != nil {
			next(rw, r)
			return
		}
		rw.Header().Set("Content-Type", "image/png")
		_, _ = rw.Write(pngBytes)
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *witness) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.auth...)
}

// TestMediaDownloadRefusesInternal checks that an image URL or redirect a
// provider names that leads to an internal address other than the
// provider's own host:port fails the task, unbilled, before a request
// reaches it, and that the provider's own host still works.
func TestMediaDownloadRefusesInternal(t *testing.T) {
	for i, c := range []struct {
		name string
		// target returns the image URL the provider answers with.
		target func(e *env, other *witness) string
		ok     bool
	}{
		{"the provider's own host", func(e *env, _ *witness) string { return e.srv.URL + "/files/own" }, true},
		{"another loopback port", func(_ *env, o *witness) string { return o.URL + "/config/" }, false},
		{"another loopback port by name", func(_ *env, o *witness) string {
			return strings.Replace(o.URL, "127.0.0.1", "localhost", 1) + "/config/"
		}, false},
		{"redirect to another loopback port", func(e *env, o *witness) string {
			return e.srv.URL + "/redirect?to=" + url.QueryEscape(o.URL+"/config/")
		}, false},
		{"redirect to a private address", func(e *env, _ *witness) string {
			return e.srv.URL + "/redirect?to=" + url.QueryEscape("http://10.255.255.1:2019/config/")
		}, false},
		{"redirect to cloud metadata", func(e *env, _ *witness) string {
			return e.srv.URL + "/redirect?to=" + url.QueryEscape("http://169.254.169.254/latest/meta-data/")
		}, false},
		{"redirect to a file", func(e *env, _ *witness) string {
			return e.srv.URL + "/redirect?to=" + url.QueryEscape("file:///etc/passwd")
		}, false},
		{"a file URL", func(*env, *witness) string { return "file:///etc/passwd" }, false},
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		other := newWitness(t, nil)
		e.mux.HandleFunc("GET /files/own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pngBytes)
		})
		e.mux.HandleFunc("GET /redirect", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
		})
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"created":1,"data":[{"url":"`+c.target(e, other)+`"}]}`)
		})
		s := e.service(nil)
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"a cat"}`), testMediaBase)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if c.ok {
			if tk.Status != StatusSucceeded || len(e.biller.charges()) != 1 {
				t.Errorf("Test %d (%s): task %q (%q), %d charges; want succeeded and charged", i, c.name, tk.Status, tk.Error, len(e.biller.charges()))
			}
			continue
		}
		if tk.Status != StatusFailed || !strings.Contains(tk.Error, "does not download from") {
			t.Errorf("Test %d (%s): task %q (%q), want failed: a refused destination", i, c.name, tk.Status, tk.Error)
		}
		if got := other.requests(); len(got) != 0 {
			t.Errorf("Test %d (%s): the other server got %d requests", i, c.name, len(got))
		}
		if ch := e.biller.charges(); len(ch) != 0 || countFiles(t, e) != 0 {
			t.Errorf("Test %d (%s): charges %v and %d files stored for a refused download", i, c.name, ch, countFiles(t, e))
		}
	}
}

// TestMediaFetchAllow checks that an operator-allowed destination is
// downloaded from, by host:port or by address range.
func TestMediaFetchAllow(t *testing.T) {
	for i, allow := range []func(o *witness) string{
		func(o *witness) string { return o.Listener.Addr().String() },
		func(*witness) string { return "127.0.0.0/8" },
	} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		other := newWitness(t, nil)
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"created":1,"data":[{"url":"`+other.URL+`/img.png"}]}`)
		})
		s := e.service(func(c *Config) { c.MediaFetchAllow = []string{allow(other)} })
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"a cat"}`), testMediaBase)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if tk.Status != StatusSucceeded || len(other.requests()) != 1 {
			t.Errorf("Test %d: task %q (%q), %d requests to the allowed server", i, tk.Status, tk.Error, len(other.requests()))
		}
	}
}

// TestMediaRedirectDropsCredentials checks that the provider's credentials
// follow a download's redirects only while the scheme, host and port stay
// those of the first URL, even if a later redirect comes back.
func TestMediaRedirectDropsCredentials(t *testing.T) {
	e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "sora-2", Kind: providers.KindVideo})
	other := newWitness(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bounce" {
			http.Redirect(w, r, e.srv.URL+"/back", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(mp4Bytes)
	})
	var mu sync.Mutex
	var back []string
	e.mux.HandleFunc("GET /v1/videos/{id}/content", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	e.mux.HandleFunc("GET /same", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/file", http.StatusFound)
	})
	e.mux.HandleFunc("GET /back", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		back = append(back, r.Header.Get("Authorization")+r.Header.Get("Api-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "video/mp4")
		_, _ = w.Write(mp4Bytes)
	})
	// The other server is on another port of the provider's host.
	s := e.service(func(c *Config) { c.MediaFetchAllow = []string{other.Listener.Addr().String()} })
	for i, to := range []string{e.srv.URL + "/same", other.URL + "/bounce"} {
		c := videoCall(e, s)
		// A provider whose dialect sends its key in two headers.
		p := *c.p
		p.Endpoint = twoKeyHeaders{}
		c.p = &p
		ref := mediaRef{path: "/videos/v1/content?to=" + url.QueryEscape(to)}
		if _, _, err := s.rehost(context.Background(), c, testMediaBase, []mediaRef{ref}); err != nil {
			t.Fatalf("Test %d: %v", i, err)
		}
	}
	if got := other.requests(); len(got) != 2 || got[0] != "" || got[1] != "" {
		t.Errorf("the other port got credentials %q, want none", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(back) != 1 || back[0] != "" {
		t.Errorf("the provider's host, reached back through another port, got credentials %q, want none", back)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range e.reqs {
		if r.path == "/same" && r.header.Get("Authorization") != "Bearer sk-upstream-1" {
			t.Errorf("a redirect within the provider's host:port lost its credentials: %q", r.header.Get("Authorization"))
		}
	}
}

// twoKeyHeaders is a providers.Endpoint that authenticates with the
// attempt's key in Authorization and in Api-Key.
type twoKeyHeaders struct{}

func (twoKeyHeaders) NewRequest(context.Context, providers.Attempt, string, bool, []byte) (*http.Request, error) {
	return nil, errors.New("not a chat provider")
}

func (twoKeyHeaders) Authorize(req *http.Request, a providers.Attempt) error {
	req.Header.Set("Authorization", "Bearer "+a.APIKey)
	req.Header.Set("Api-Key", a.APIKey)
	return nil
}

// TestMediaDownloadThroughProxy checks that when provider traffic goes
// through a proxy, a download is checked before it is handed to the
// proxy: the provider's own host goes through, an internal one is refused
// without reaching the proxy.
func TestMediaDownloadThroughProxy(t *testing.T) {
	for i, c := range []struct {
		own bool
	}{{true}, {false}} {
		e := newEnv(t, providers.ProtocolOpenAI, &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage})
		other := newWitness(t, nil)
		var mu sync.Mutex
		var proxied []string
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			proxied = append(proxied, r.Method+" "+r.URL.String())
			mu.Unlock()
			e.srv.Config.Handler.ServeHTTP(w, r)
		}))
		t.Cleanup(proxy.Close)
		proxyURL, _ := url.Parse(proxy.URL)
		file := other.URL + "/img.png"
		if c.own {
			file = e.srv.URL + "/files/own"
		}
		e.mux.HandleFunc("GET /files/own", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(pngBytes)
		})
		e.mux.HandleFunc("POST /v1/images/generations", func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, `{"created":1,"data":[{"url":"`+file+`"}]}`)
		})
		s := e.service(func(c *Config) {
			c.Client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
		})
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"a cat"}`), testMediaBase)
		if aerr != nil {
			t.Fatal(aerr)
		}
		mu.Lock()
		got := strings.Join(proxied, ", ")
		mu.Unlock()
		if c.own && (tk.Status != StatusSucceeded || !strings.Contains(got, "GET "+file)) {
			t.Errorf("Test %d: task %q (%q), proxied %s; want succeeded through the proxy", i, tk.Status, tk.Error, got)
		}
		if !c.own && (tk.Status != StatusFailed || strings.Contains(got, "GET ") || len(other.requests()) != 0) {
			t.Errorf("Test %d: task %q (%q), proxied %s; want failed before the proxy", i, tk.Status, tk.Error, got)
		}
	}
}

// TestMediaDownloadHTTP2 checks downloads over HTTP/2 from a transport
// configured by x/net/http2, as Caddy's is: the provider's own host is
// downloaded from over its own connection, another loopback host is
// refused.
func TestMediaDownloadHTTP2(t *testing.T) {
	var mu sync.Mutex
	var protos []string
	provider := httptest.NewUnstartedServer(nil)
	provider.EnableHTTP2 = true
	other := httptest.NewUnstartedServer(nil)
	other.EnableHTTP2 = true
	var otherHits int
	other.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	})
	other.StartTLS()
	defer other.Close()
	provider.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/images/generations" {
			file := "https://" + r.Host + "/files/own.png"
			if body, _ := io.ReadAll(r.Body); strings.Contains(string(body), "other") {
				file = other.URL + "/x.png"
			}
			writeJSON(w, 200, `{"created":1,"data":[{"url":"`+file+`"}]}`)
			return
		}
		mu.Lock()
		protos = append(protos, r.Proto)
		mu.Unlock()
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(pngBytes)
	})
	provider.StartTLS()
	defer provider.Close()
	base := provider.Client().Transport.(*http.Transport).Clone()
	base.TLSClientConfig.RootCAs.AddCert(other.Certificate())
	if err := http2.ConfigureTransport(base); err != nil {
		t.Fatal(err)
	}
	p := &providers.Provider{Name: "up", Protocol: providers.ProtocolOpenAI, BaseURLs: []string{provider.URL + "/v1"}, APIKeys: []string{"k"}}
	route := &providers.Route{Pattern: "dall-e-3", Kind: providers.KindImage, Provider: p}
	e := newEnv(t, providers.ProtocolOpenAI)
	var err error
	if e.table, err = providers.NewTable([]*providers.Provider{p}, []*providers.Route{route}); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		prompt string
		ok     bool
	}{{"own", true}, {"other", false}} {
		s := e.service(func(cfg *Config) { cfg.Client = &http.Client{Transport: base} })
		tk, aerr := s.Create(context.Background(), alice, []byte(`{"model":"dall-e-3","prompt":"`+c.prompt+`"}`), testMediaBase)
		if aerr != nil {
			t.Fatal(aerr)
		}
		if (tk.Status == StatusSucceeded) != c.ok {
			t.Errorf("Test %d: task %q (%q), want success %v", i, tk.Status, tk.Error, c.ok)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if otherHits != 0 || len(protos) != 1 || protos[0] != "HTTP/2.0" {
		t.Errorf("the other host got %d requests, the provider's files went over %q; want none, and one over HTTP/2", otherHits, protos)
	}
}
