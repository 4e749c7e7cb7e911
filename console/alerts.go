package console

import (
	"context"
	"net/http"

	"github.com/caddy-air/caddy-air/store"
)

// alertsShown bounds the events the alerts page lists.
const alertsShown = 100

// AlertService reads the alerts and their deliveries.
type AlertService interface {
	// Recent returns the deliveries of the n newest alerts, newest first
	// (an alert without webhook has one entry, in state "none").
	Recent(ctx context.Context, n int) ([]store.AlertDelivery, error)
	// Webhooks names the configured webhooks (never their URLs).
	Webhooks() []string
}

// alertRow is an alert and its deliveries, as the page shows them.
type alertRow struct {
	Event      store.AlertEvent
	Deliveries []store.AlertDelivery
}

// alertsData is the alerts page's data.
type alertsData struct {
	Webhooks []string
	Alerts   []alertRow
}

// alertsPage lists the recent alerts, each with the last state of its
// delivery to each webhook.
func (h *Handler) alertsPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Services.Alerts == nil {
		h.fail(w, r, http.StatusNotFound, "this gateway keeps no alerts")
		return
	}
	ds, err := h.cfg.Services.Alerts.Recent(r.Context(), alertsShown)
	if err != nil {
		h.internal(w, r, "reading the alerts", err)
		return
	}
	d := alertsData{Webhooks: h.cfg.Services.Alerts.Webhooks()}
	for _, dl := range ds {
		if n := len(d.Alerts); n > 0 && d.Alerts[n-1].Event.ID == dl.Event.ID {
			d.Alerts[n-1].Deliveries = append(d.Alerts[n-1].Deliveries, dl)
			continue
		}
		d.Alerts = append(d.Alerts, alertRow{Event: dl.Event, Deliveries: []store.AlertDelivery{dl}})
	}
	h.render(w, r, http.StatusOK, "alerts", "Alerts", d)
}
