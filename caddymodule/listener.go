package caddymodule

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/caddy-air/caddy-air/apierror"
)

func init() {
	caddy.RegisterModule(ErrorsListener{})
}

// ErrorsListener is the `air_errors` listener wrapper. Go's HTTP server
// answers a request it cannot parse (431 Request Header Fields Too Large, a
// malformed Content-Length or request line: 400, an unknown
// Transfer-Encoding: 501) itself, in plain text, before any Caddy handler
// runs. This wrapper recognises exactly those answers on the connection and
// rewrites them into the same status with a JSON error body in OpenAI's
// shape (the request, unparsed, has no endpoint to pick another shape), so
// that API clients get JSON from every response. Everything else passes
// through untouched.
//
// Caddy places listener wrappers after TLS unless the `tls` placeholder
// wrapper says otherwise, so the wrapper sees the plaintext it needs; keep
// it after `tls`.
type ErrorsListener struct{}

// CaddyModule returns the Caddy module information.
func (ErrorsListener) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "caddy.listeners.air_errors",
		New: func() caddy.Module { return new(ErrorsListener) },
	}
}

// WrapListener wraps ln so that its connections rewrite Go's plain-text
// error answers.
func (ErrorsListener) WrapListener(ln net.Listener) net.Listener {
	return errorsListener{ln}
}

// UnmarshalCaddyfile sets up the wrapper from Caddyfile tokens. Syntax:
//
//	servers {
//		listener_wrappers {
//			air_errors
//		}
//	}
func (ErrorsListener) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

type errorsListener struct{ net.Listener }

// Accept wraps the next connection. A TLS connection keeps its
// ConnectionState, which Caddy and net/http need.
func (l errorsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if _, ok := c.(connectionStater); ok {
		return errorsTLSConn{errorsConn{c}}, nil
	}
	return errorsConn{c}, nil
}

type connectionStater interface {
	ConnectionState() tls.ConnectionState
}

// errorsConn rewrites net/http's own plain-text error answers.
type errorsConn struct{ net.Conn }

// Write passes p on, rewritten when it is one of net/http's own error
// answers, which it writes with one Write each.
func (c errorsConn) Write(p []byte) (int, error) {
	if out, ok := rewritePlainError(p); ok {
		if _, err := c.Conn.Write(out); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// errorsTLSConn is an errorsConn over a TLS connection.
type errorsTLSConn struct{ errorsConn }

// ConnectionState returns the TLS state of the wrapped connection.
func (c errorsTLSConn) ConnectionState() tls.ConnectionState {
	return c.Conn.(connectionStater).ConnectionState()
}

// plainErrorHeaders are the headers of every error answer that net/http
// writes itself (see errorHeaders in net/http/server.go). A response of a
// handler never has them in this order: net/http writes a handler's headers
// sorted, and with a Date.
const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// rewritePlainError returns p rewritten as a JSON error, if p is a whole
// error answer of net/http: "HTTP/1.1 <code> <text>" + plainErrorHeaders +
// a plain-text body.
func rewritePlainError(p []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 3 {
		return nil, false
	}
	statusLine, body, ok := bytes.Cut(rest, []byte(plainErrorHeaders))
	if !ok || bytes.ContainsAny(statusLine, "\r\n") {
		return nil, false
	}
	status, err := strconv.Atoi(string(statusLine[:3]))
	if err != nil || status < 400 || status > 599 {
		return nil, false
	}
	msg := strings.TrimSpace(string(body))
	if msg == "" {
		msg = http.StatusText(status)
	}
	code := strings.ReplaceAll(strings.ToLower(http.StatusText(status)), " ", "_")
	if code == "" {
		code = "bad_request"
	}
	body = apierror.New(status, apierror.TypeInvalidRequest, code, msg).OpenAIBody()
	var out bytes.Buffer
	out.WriteString("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n")
	out.WriteString("Content-Type: application/json\r\n")
	out.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	out.WriteString("Connection: close\r\n\r\n")
	out.Write(body)
	return out.Bytes(), true
}

// Interface guards.
var (
	_ caddy.ListenerWrapper = (*ErrorsListener)(nil)
	_ caddyfile.Unmarshaler = (*ErrorsListener)(nil)
	_ connectionStater      = errorsTLSConn{}
)
