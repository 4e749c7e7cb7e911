package console

import (
	"net/http"
	"time"

	"github.com/caddy-air/caddy-air/tasks"
)

// tasksShown is how many tasks the tasks page lists.
const tasksShown = 100

// tasksData is the tasks page's data.
type tasksData struct {
	Tasks []*tasks.Task
	Now   time.Time
}

func (h *Handler) tasksPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Tasks == nil {
		h.fail(w, r, http.StatusNotFound, "tasks are not served here")
		return
	}
	list, err := h.cfg.Services.Tasks.List(r.Context(), userOf(r), tasksShown)
	if err != nil {
		h.internal(w, r, "listing tasks", err)
		return
	}
	// The service filters by owner; this keeps a page from ever showing
	// another user's task should it not.
	own := list[:0]
	for _, t := range list {
		if t.User == userOf(r) {
			own = append(own, t)
		}
	}
	h.render(w, r, http.StatusOK, "tasks", "Tasks", tasksData{Tasks: own, Now: h.cfg.Now()})
}
