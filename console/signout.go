package console

import "net/http"

// SignOutRealm is the realm of the 401 challenge that signs a browser out
// of basic authentication. It should match the realm of the site's
// basic_auth (Caddy's default, "restricted"), so that the browser drops
// the credentials it saved for that realm.
const SignOutRealm = "restricted"

// signoutPage explains how to sign out: the console keeps no session, the
// browser holds the credentials of basic authentication.
func (h *Handler) signoutPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signout", "Sign out", nil)
}

// signoutNow answers 401 with a basic-authentication challenge: browsers
// ask for new credentials, and on Cancel forget the ones they had for the
// realm and show the page. It changes nothing on the server, so it is a
// GET.
func (h *Handler) signoutNow(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("WWW-Authenticate", `Basic realm="`+SignOutRealm+`", charset="UTF-8"`)
	w.Header().Set("Clear-Site-Data", `"cache"`)
	h.render(w, r, http.StatusUnauthorized, "signedout", "Signed out", nil)
}
