package caddymodule

import (
	"crypto/x509"
	"net/http"
	"os"
	"os/user"
	"strings"

	"github.com/caddy-air/caddy-air/audit"
)

// The mutations of keys and limits that the admin API and the console
// share are gateway.Shared's (CreateKey, SetLimits…), each recorded in
// the audit trail; the actor comes from ctx (audit.WithActor), set by
// auditedAdmin for the admin API and by Console.ServeHTTP for the
// console.

// Headers by which `caddy air` tells the admin API that it is the
// caller, and as which operating-system user it runs. They are the
// CLI's own account of itself, not authentication: whoever reaches the
// admin API is trusted.
const (
	headerAuditClient = "X-Air-Client"
	headerAuditUser   = "X-Air-Os-User"
)

// auditedAdmin wraps an admin handler so that its changes are recorded as
// the admin API's (or the CLI's), with the client's address and, over
// mutual TLS, its certificate's subject.
func auditedAdmin(h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		return h(w, r.WithContext(audit.WithActor(r.Context(), adminActor(r))))
	}
}

// adminActor is the actor of an admin API request.
func adminActor(r *http.Request) audit.Actor {
	a := audit.Actor{Name: audit.ViaAdminAPI, Via: audit.ViaAdminAPI, ClientIP: clientIP(r)}
	if r.Header.Get(headerAuditClient) == audit.ViaCLI {
		a.Name, a.Via = audit.ViaCLI, audit.ViaCLI
		a.Identity = clean(r.Header.Get(headerAuditUser))
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		a.Identity = certSubject(r.TLS.PeerCertificates[0])
	}
	return a
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

// cliHeaders are the headers `caddy air` sends with each admin request.
func cliHeaders() http.Header {
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
