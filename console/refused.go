package console

import (
	"net/http"
	"strings"

	"github.com/caddy-air/caddy-air/refusals"
)

// refusalsShown bounds the refusals a page lists.
const refusalsShown = 50

// refusalsData is the operators' refusals page's data.
type refusalsData struct {
	ID, User string
	Entries  []refusals.Entry
}

// refusalsPage lists the requests the gateway refused by itself (no
// key, a bad body, a limit, an unknown model, no upstream), found by the
// request id a client quotes or by user.
func (h *Handler) refusalsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := refusalsData{ID: strings.TrimSpace(q.Get("id")), User: strings.TrimSpace(q.Get("user"))}
	d.Entries = h.cfg.Services.Operators.Refusals(refusals.Filter{ID: d.ID, User: d.User, Limit: refusalsShown})
	h.render(w, r, http.StatusOK, "refusals", "Refused requests", d)
}
