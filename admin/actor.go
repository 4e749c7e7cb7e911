package admin

import (
	"crypto/x509"
	"net/http"
	"os"
	"os/user"
	"strings"

	"github.com/caddy-air/caddy-air/audit"
)

// Headers by which `caddy air` tells the admin API that it is the
// caller, and as which operating-system user it runs. They are the
// CLI's own account of itself, not authentication: whoever reaches the
// admin API is trusted.
const (
	headerAuditClient = "X-Air-Client"
	headerAuditUser   = "X-Air-Os-User"
)

// audited wraps an admin handler so that its changes are recorded as
// the admin API's (or the CLI's), with the client's address and, over
// mutual TLS, its certificate's subject.
func (a API) audited(h HandlerFunc) HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return h(w, r.WithContext(audit.WithActor(r.Context(), a.actor(r))))
	}
}

// actor is the actor of an admin API request.
func (a API) actor(r *http.Request) audit.Actor {
	act := audit.Actor{Name: audit.ViaAdminAPI, Via: audit.ViaAdminAPI, ClientIP: a.clientIP(r)}
	if r.Header.Get(headerAuditClient) == audit.ViaCLI {
		act.Name, act.Via = audit.ViaCLI, audit.ViaCLI
		act.Identity = clean(r.Header.Get(headerAuditUser))
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		act.Identity = certSubject(r.TLS.PeerCertificates[0])
	}
	return act
}

// certSubject names a client certificate's holder.
func certSubject(c *x509.Certificate) string { return c.Subject.String() }

// clean bounds a self-reported value for the trail.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// CLIHeaders are the headers `caddy air` sends with each admin request.
func CLIHeaders() http.Header {
	h := http.Header{headerAuditClient: {audit.ViaCLI}}
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	if name != "" {
		h.Set(headerAuditUser, name)
	}
	return h
}
