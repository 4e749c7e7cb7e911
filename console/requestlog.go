package console

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// RequestLogService reads stored request logs for the console.
type RequestLogService interface {
	// RequestLog returns the log of ledger record id when viewer may see
	// it: an operator (operator true), the key's owner, or an admin of the
	// key's team. Any other viewer, and a record without a log, get
	// ErrNotFound: whether a log exists is not told to others.
	RequestLog(ctx context.Context, viewer string, operator bool, id string) (RequestLog, error)
}

// RequestLog is a stored request log as the console shows it.
type RequestLog struct {
	// ID is the ledger record's id.
	ID string
	// KeyID, User and Team own the request.
	KeyID, User, Team string
	// Time is when the request arrived.
	Time time.Time
	// Request and Response are the bodies, capped and redacted.
	Request, Response string
	// RequestTruncated and ResponseTruncated report a body cut at the cap.
	RequestTruncated, ResponseTruncated bool
}

// requestLogPage shows the stored log of a ledger record.
func (h *Handler) requestLogPage(w http.ResponseWriter, r *http.Request) {
	svc := h.cfg.Services.RequestLogs
	if svc == nil {
		h.fail(w, r, http.StatusNotFound, "no request log is stored for this request")
		return
	}
	user := userOf(r)
	l, err := svc.RequestLog(r.Context(), user, h.isAdmin(user), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		h.fail(w, r, http.StatusNotFound, "no request log is stored for this request")
		return
	}
	if err != nil {
		h.internal(w, r, "reading the request log", err)
		return
	}
	h.render(w, r, http.StatusOK, "requestlog", "Request log", l)
}
