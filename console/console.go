// Package console is caddy-air's web console: server-rendered pages where
// users create and revoke their API keys, see their usage, tasks and a
// chat playground, and operators see users, set the limits of users and
// keys, search the ledger across users and see prices and providers. It has no password store: the caller passes the identity
// that Caddy's authentication (basic_auth, forward_auth) established.
// It imports no Caddy package; caddymodule adapts it (air_console).
package console

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config sets up a console Handler.
type Config struct {
	// Prefix is the path the console is mounted under, e.g. "/console".
	// Requests whose path starts with it have it removed; links are made
	// under it.
	Prefix string
	// Admins are the identities that see the operators' page.
	Admins []string
	// CSRFKey signs the anti-CSRF tokens of forms; at least 32 bytes.
	// Every instance behind one address needs the same key.
	CSRFKey []byte
	// Services are what the pages show and change.
	Services Services
	// Logger logs service failures; nil logs nothing.
	Logger *zap.Logger
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Handler serves the console.
type Handler struct {
	cfg    Config
	mux    *http.ServeMux
	pages  map[string]*template.Template
	static http.Handler
	cop    *http.CrossOriginProtection
	// forms are the key form's one-time tokens already used.
	forms onceForms
}

// userKey is the context key of the signed-in user.
type userKey struct{}

// contentSecurityPolicy allows only the console's own scripts, styles,
// images and requests: no inline script, no framing, forms post only to
// the console.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"media-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// New returns a console handler for cfg.
func New(cfg Config) (*Handler, error) {
	if len(cfg.CSRFKey) < 32 {
		return nil, errors.New("console: the CSRF key must have at least 32 bytes")
	}
	cfg.Prefix = "/" + strings.Trim(cfg.Prefix, "/")
	if cfg.Prefix == "/" {
		cfg.Prefix = ""
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, pages: pages, static: http.StripPrefix("/static/", http.FileServerFS(sub)),
		cop: http.NewCrossOriginProtection()}
	h.routes()
	return h, nil
}

// routes registers the console's pages, relative to the prefix.
func (h *Handler) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, h.cfg.Prefix+"/keys", http.StatusSeeOther)
	})
	m.Handle("GET /static/", h.static)
	m.HandleFunc("GET /keys", h.keysPage)
	m.HandleFunc("POST /keys", h.createKey)
	m.HandleFunc("GET /keys/{id}/revoke", h.confirmRevoke)
	m.HandleFunc("POST /keys/{id}/revoke", h.revokeKey)
	m.HandleFunc("GET /usage", h.usagePage)
	m.HandleFunc("GET /usage.csv", h.usageCSV)
	m.HandleFunc("GET /tasks", h.tasksPage)
	m.HandleFunc("GET /playground", h.playgroundPage)
	m.HandleFunc("POST /playground/chat", h.playgroundChat)
	m.HandleFunc("GET /operators", h.admin(h.operatorsPage))
	m.HandleFunc("POST /operators/budgets", h.admin(h.setBudget))
	m.HandleFunc("POST /operators/budgets/delete", h.admin(h.deleteBudget))
	m.HandleFunc("GET /operators/ledger", h.admin(h.ledgerPage))
	m.HandleFunc("GET /operators/ledger.csv", h.admin(h.ledgerCSV))
	m.HandleFunc("GET /operators/keys", h.admin(h.allKeysPage))
	m.HandleFunc("POST /operators/keys", h.admin(h.createKeyFor))
	m.HandleFunc("GET /operators/keys/{id}/revoke", h.admin(h.confirmRevokeAny))
	m.HandleFunc("POST /operators/keys/{id}/revoke", h.admin(h.revokeAnyKey))
	m.HandleFunc("GET /operators/keys/{id}/regenerate", h.admin(h.confirmRegenerate))
	m.HandleFunc("POST /operators/keys/{id}/regenerate", h.admin(h.regenerateKey))
	m.HandleFunc("GET /operators/keys/{id}/edit", h.admin(h.editKeyPage))
	m.HandleFunc("POST /operators/keys/{id}/edit", h.admin(h.editKey))
	m.HandleFunc("GET /operators/spend", h.admin(h.spendPage))
	m.HandleFunc("GET /operators/refusals", h.admin(h.refusalsPage))
	m.HandleFunc("GET /team", h.teamPage)
	m.HandleFunc("POST /team/members", h.addTeamMember)
	m.HandleFunc("POST /team/members/{user}/remove", h.removeTeamMember)
	m.HandleFunc("POST /team/keys", h.createTeamKey)
	m.HandleFunc("POST /team/keys/{id}/revoke", h.revokeTeamKey)
	m.HandleFunc("GET /operators/teams", h.admin(h.teamsPage))
	if h.cfg.Services.Audit != nil {
		m.HandleFunc("GET /operators/audit", h.admin(h.auditPage))
		m.HandleFunc("GET /operators/audit.csv", h.admin(h.auditExport(audit.FormatCSV)))
		m.HandleFunc("GET /operators/audit.jsonl", h.admin(h.auditExport(audit.FormatJSONL)))
	}
	m.HandleFunc("GET /operators/alerts", h.admin(h.alertsPage))
	m.HandleFunc("GET /request-logs/{id}", h.requestLogPage)
	m.HandleFunc("GET /signout", h.signoutPage)
	m.HandleFunc("GET /signout/now", h.signoutNow)
	h.mux = m
}

// ServeHTTP serves r for user, the identity Caddy's authentication
// established; "" answers 401 and shows nothing.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request, user string) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", contentSecurityPolicy)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	static := strings.HasPrefix(r.URL.Path, h.cfg.Prefix+"/static/")
	if user == "" && !(static && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
		// The page says what the console is and how to sign in; it
		// shows no data, and its styles and icon are public.
		hd.Set("Cache-Control", "no-store")
		h.render(w, r, http.StatusUnauthorized, "welcome", "Sign in", nil)
		return
	}
	if !static {
		hd.Set("Cache-Control", "no-store")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if err := h.checkCSRF(r, user); err != nil {
			http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
	}
	r2 := r.WithContext(context.WithValue(r.Context(), userKey{}, user))
	if rest, ok := strings.CutPrefix(r.URL.Path, h.cfg.Prefix); ok && h.cfg.Prefix != "" {
		u := *r.URL
		u.Path = rest
		u.RawPath = ""
		if u.Path == "" {
			u.Path = "/"
		}
		r2.URL = &u
	}
	h.mux.ServeHTTP(w, r2)
}

// checkCSRF refuses a mutating request that a browser sent from another
// site (Sec-Fetch-Site, Origin) or without the form's token.
func (h *Handler) checkCSRF(r *http.Request, user string) error {
	if err := h.cop.Check(r); err != nil {
		return errors.New("cross-origin request refused")
	}
	tok := r.Header.Get("X-CSRF-Token")
	if tok == "" {
		if err := r.ParseForm(); err == nil {
			tok = r.PostForm.Get("csrf_token")
		}
	}
	if tok == "" {
		return errors.New("the form's anti-CSRF token is missing")
	}
	if !hmac.Equal([]byte(tok), []byte(h.csrfToken(user))) {
		return errors.New("the form's anti-CSRF token is wrong; reload the page")
	}
	return nil
}

// csrfToken is user's anti-CSRF token: a MAC of the identity, so it needs
// no session storage and differs per user.
func (h *Handler) csrfToken(user string) string {
	m := hmac.New(sha256.New, h.cfg.CSRFKey)
	m.Write([]byte("air-console-csrf\x00"))
	m.Write([]byte(user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// userOf returns the signed-in user of r.
func userOf(r *http.Request) string {
	u, _ := r.Context().Value(userKey{}).(string)
	return u
}

// isAdmin reports whether user is an operator.
func (h *Handler) isAdmin(user string) bool {
	return slices.Contains(h.cfg.Admins, user)
}

// admin wraps an operators' page: other users get 403.
func (h *Handler) admin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !h.isAdmin(userOf(r)) || h.cfg.Services.Operators == nil {
			h.fail(w, r, http.StatusForbidden, "the operators' page is for the console's admins")
			return
		}
		next(w, r)
	}
}

// page is what every template gets.
type page struct {
	Title, Nav, User, Prefix, CSRF string
	Admin                          bool
	Has                            map[string]bool
	Error                          string
	Data                           any
}

// render writes the template name with data.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	h.renderMsg(w, r, status, name, title, data, "")
}

// renderMsg writes the template name with data and an error message
// above it.
func (h *Handler) renderMsg(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, msg string) {
	user := userOf(r)
	s := h.cfg.Services
	p := page{
		Title: title, Nav: name, User: user, Prefix: h.cfg.Prefix, CSRF: h.csrfToken(user),
		Admin: h.isAdmin(user) && s.Operators != nil, Data: data, Error: msg,
		Has: map[string]bool{"keys": s.Keys != nil, "usage": s.Usage != nil, "tasks": s.Tasks != nil, "playground": s.Playground != nil,
			"teams": s.Teams != nil, "alerts": s.Alerts != nil, "audit": s.Audit != nil, "regenerate": h.regenerator() != nil},
	}
	t, ok := h.pages[name]
	if !ok {
		http.Error(w, "500 no such page", http.StatusInternalServerError)
		return
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, "layout", p); err != nil {
		h.cfg.Logger.Error("rendering a console page", zap.String("page", name), zap.Error(err))
		http.Error(w, "500 internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// fail renders an error page with status and msg.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "error", http.StatusText(status), msg)
}

// internal logs err and renders a 500 page that does not reveal it; a
// write that the store refused on a full disk gets 507 and says so.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	h.cfg.Logger.Error("console: "+what, zap.Error(err))
	if errors.Is(err, store.ErrStorageFull) {
		h.fail(w, r, http.StatusInsufficientStorage, what+" failed: the gateway's storage is full; try again once space is freed")
		return
	}
	h.fail(w, r, http.StatusInternalServerError, what+" failed; the server log has the cause")
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", base, err)
		}
		pages[base] = t
	}
	return pages, nil
}
