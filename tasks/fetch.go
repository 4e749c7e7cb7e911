package tasks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"
)

// maxMediaRedirects is how many redirects a media download follows, as
// many as Go's default client policy.
const maxMediaRedirects = 10

// fetchGuard decides where media downloads may connect. A provider names
// the URLs of the files it generated, so they are untrusted: a download
// goes to the host:port of one of the provider's configured base URLs, to
// an operator-allowed destination, or to an address that is public
// unicast. Every connection is checked when it is dialed, on the address
// it is dialed to, which covers redirects and DNS rebinding alike.
type fetchGuard struct {
	// nets are the operator-allowed address ranges.
	nets []netip.Prefix
	// hosts are the operator-allowed host:port destinations.
	hosts map[string]bool
	// dialer dials the destinations that are allowed by name.
	dialer net.Dialer
	// proxies holds the host:port of the proxies requests went through,
	// which are dialed whatever their address.
	proxies sync.Map
}

// newFetchGuard parses the operator's allowed destinations: CIDR
// prefixes, addresses, and host:port pairs.
func newFetchGuard(allow []string) (*fetchGuard, error) {
	g := &fetchGuard{hosts: map[string]bool{}, dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}}
	for _, a := range allow {
		if p, err := netip.ParsePrefix(a); err == nil {
			g.nets = append(g.nets, p.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(a); err == nil {
			g.nets = append(g.nets, netip.PrefixFrom(ip, ip.BitLen()))
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil || host == "" || port == "" {
			return nil, fmt.Errorf("media_fetch_allow %q: not a CIDR range, an address or a host:port", a)
		}
		g.hosts[hostPort(host, port)] = true
	}
	return g, nil
}

// CheckMediaFetchAllow reports whether each of allow is a destination
// Config.MediaFetchAllow accepts: a CIDR range, an address or a
// host:port.
func CheckMediaFetchAllow(allow []string) error {
	_, err := newFetchGuard(allow)
	return err
}

// transport returns a transport like base (or Go's default) whose
// connections the guard checks. It keeps no idle connections, so that a
// connection dialed for one provider is never reused for another
// provider's file. When base sends a request through a proxy, the proxy
// connects: the destination is then checked on the addresses its name
// resolves to before the request is sent.
func (g *fetchGuard) transport(base http.RoundTripper) *http.Transport {
	t, ok := base.(*http.Transport)
	if !ok || t == nil {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	t.DisableKeepAlives = true
	if _, h2 := t.TLSNextProto["h2"]; h2 {
		// x/net/http2.ConfigureTransport (as Caddy's transport uses) pools
		// HTTP/2 connections in the base transport's: speak HTTP/2 with
		// net/http's own, so that downloads share no connections.
		t.TLSNextProto = nil
		t.ForceAttemptHTTP2 = true
	}
	t.Dial, t.DialTLS, t.DialTLSContext = nil, nil, nil //nolint:staticcheck // cleared so DialContext is used
	t.DialContext = g.dial
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			u, err := proxy(req)
			if err != nil || u == nil {
				return u, err
			}
			if err := g.checkName(req.Context(), req.URL); err != nil {
				return nil, err
			}
			g.proxies.Store(urlHostPort(u), true)
			return u, nil
		}
	}
	return t
}

// checkName checks the destination of u, which a proxy connects to: the
// host:port of the provider or one the operator allows, or a name that
// resolves only to allowed addresses.
func (g *fetchGuard) checkName(ctx context.Context, u *url.URL) error {
	key := urlHostPort(u)
	if g.allowedName(ctx, key) {
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if ip = ip.Unmap(); !publicAddr(ip) && !g.allowedAddr(ip) {
			return &refusedError{dest: key, reason: "non-public address " + ip.String()}
		}
	}
	return nil
}

// allowedName reports whether a download may connect to the host:port key
// whatever its address: it is the provider's, or the operator allows it.
func (g *fetchGuard) allowedName(ctx context.Context, key string) bool {
	origins, _ := ctx.Value(originsKey{}).(map[string]bool)
	return origins[key] || g.hosts[key]
}

// originsKey is the context key of the host:port destinations of the
// task's provider.
type originsKey struct{}

// withOrigins returns ctx carrying the host:port of each of baseURLs as
// destinations a download may connect to whatever their address.
func withOrigins(ctx context.Context, baseURLs ...string) context.Context {
	m := map[string]bool{}
	for _, b := range baseURLs {
		if u, err := url.Parse(b); err == nil && u.Host != "" {
			m[urlHostPort(u)] = true
		}
	}
	return context.WithValue(ctx, originsKey{}, m)
}

// dial connects to addr, a host:port, if it is a proxy's or the task's
// provider or the operator allow it by name, else only if it resolves to
// an allowed address.
func (g *fetchGuard) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	key := strings.ToLower(addr)
	if _, proxy := g.proxies.Load(key); proxy || g.allowedName(ctx, key) {
		return g.dialer.DialContext(ctx, network, addr)
	}
	d := g.dialer
	d.ControlContext = func(_ context.Context, _, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &refusedError{dest: addr, reason: "an unparsable address " + address}
		}
		ip := ap.Addr().Unmap()
		if publicAddr(ip) || g.allowedAddr(ip) {
			return nil
		}
		return &refusedError{dest: addr, reason: "non-public address " + ip.String()}
	}
	return d.DialContext(ctx, network, addr)
}

// allowedAddr reports whether ip is in an operator-allowed range.
func (g *fetchGuard) allowedAddr(ip netip.Addr) bool {
	for _, p := range g.nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// nonPublic are the special-purpose ranges (IANA registries) that are not
// public unicast beyond those the netip predicates cover: loopback,
// private, link-local, multicast, unspecified and broadcast.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: may embed any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments, Teredo among them
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: may embed any IPv4 address
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
	netip.MustParsePrefix("::/96"),           // deprecated IPv4-compatible
}

// publicAddr reports whether ip is a public unicast address, one a
// provider's file may be downloaded from: not loopback, private (RFC 1918,
// fc00::/7), link-local, unspecified, multicast, CGNAT, documentation or
// otherwise reserved.
func publicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.Zone() != "" || !ip.IsGlobalUnicast() || ip.IsPrivate() ||
		ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// refusedError is a download the guard did not let through.
type refusedError struct {
	// dest is the host:port, or the URL without its path and query, that
	// was refused.
	dest string
	// reason says why.
	reason string
}

func (e *refusedError) Error() string {
	return "media download to " + e.dest + " refused: " + e.reason
}

// mediaClient returns the client of one download. It follows at most
// maxMediaRedirects redirects, to http and https URLs only, and sends
// the credentials in header only while the scheme, host and port are
// those of the first URL.
func (s *Service) mediaClient(header http.Header) *http.Client {
	return &http.Client{Transport: s.fetch, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxMediaRedirects {
			return fmt.Errorf("stopped after %d redirects", maxMediaRedirects)
		}
		if err := checkScheme(req.URL); err != nil {
			return err
		}
		origin := via[0].URL
		for _, r := range append(via[1:], req) {
			if !sameOrigin(r.URL, origin) {
				for k := range header {
					req.Header.Del(k)
				}
				req.Header.Del("Authorization")
				req.Header.Del("Cookie")
				break
			}
		}
		return nil
	}}
}

// checkScheme refuses URLs other than http and https.
func checkScheme(u *url.URL) error {
	if s := strings.ToLower(u.Scheme); s != "http" && s != "https" {
		return &refusedError{dest: u.Scheme + ":", reason: "not an http or https URL"}
	}
	return nil
}

// sameOrigin reports whether a and b have the same scheme, host and port.
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && urlHostPort(a) == urlHostPort(b)
}

// urlHostPort is the lowercase host:port u connects to, with the port of
// its scheme when it names none.
func urlHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return hostPort(u.Hostname(), port)
}

// hostPort joins a lowercase host and port.
func hostPort(host, port string) string {
	return strings.ToLower(net.JoinHostPort(host, port))
}

// refused returns the refusedError in err's chain, or nil.
func refused(err error) *refusedError {
	var re *refusedError
	if errors.As(err, &re) {
		return re
	}
	return nil
}
