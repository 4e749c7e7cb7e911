package console

import (
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/caddy-air/caddy-air/tasks"
)

// tasksShown is how many tasks a page of the tasks page lists.
const tasksShown = 50

// tasksData is the tasks page's data.
type tasksData struct {
	Tasks []*tasks.Task
	Now   time.Time
	// First is the first page's link, on a later page; More the next
	// page's, when older tasks follow.
	First, More string
}

func (h *Handler) tasksPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Tasks == nil {
		h.fail(w, r, http.StatusNotFound, "tasks are not served here")
		return
	}
	after := r.URL.Query().Get("after")
	page, err := h.cfg.Services.Tasks.List(r.Context(), userOf(r), after, tasksShown)
	if errors.Is(err, ErrInvalid) {
		h.fail(w, r, http.StatusBadRequest, "you have no such task to list after: start again from the first page")
		return
	}
	if err != nil {
		h.internal(w, r, "listing tasks", err)
		return
	}
	// The service filters by owner; this keeps a page from ever showing
	// another user's task should it not.
	d := tasksData{Now: h.cfg.Now()}
	for _, t := range page.Tasks {
		if t.User == userOf(r) {
			d.Tasks = append(d.Tasks, t)
		}
	}
	if after != "" {
		d.First = h.cfg.Prefix + "/tasks"
	}
	if page.HasMore && len(page.Tasks) > 0 {
		d.More = h.cfg.Prefix + "/tasks?" + url.Values{"after": {page.Tasks[len(page.Tasks)-1].ID}}.Encode()
	}
	h.render(w, r, http.StatusOK, "tasks", "Tasks", d)
}
