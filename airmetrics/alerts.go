package airmetrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Alerts holds the collectors of the alerts (air_alerts_*); it implements
// alerts.Observer. Create it once per process with NewAlerts and register
// it in each registry with Register.
type Alerts struct {
	raised    *prometheus.CounterVec
	dropped   *prometheus.CounterVec
	delivered *prometheus.CounterVec
}

// NewAlerts creates the alerts' collectors.
func NewAlerts() *Alerts {
	return &Alerts{
		raised: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_alerts_raised_total", Help: "Alerts raised and queued for the outbox, by kind.",
		}, []string{"kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_alerts_dropped_total", Help: "Alerts dropped because the alert queue was full, by kind.",
		}, []string{"kind"}),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "air_alerts_deliveries_total", Help: "Webhook deliveries of alerts that ended, by state (delivered, failed).",
		}, []string{"state"}),
	}
}

// Register registers the collectors in reg; registering them twice in
// one registry is not an error.
func (a *Alerts) Register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{a.raised, a.dropped, a.delivered} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) && are.ExistingCollector == c {
				continue
			}
			return err
		}
	}
	return nil
}

// Raised counts an alert of kind queued.
func (a *Alerts) Raised(kind string) { a.raised.WithLabelValues(kind).Inc() }

// Dropped counts an alert of kind dropped on a full queue.
func (a *Alerts) Dropped(kind string) { a.dropped.WithLabelValues(kind).Inc() }

// Delivered counts a delivery that ended in state.
func (a *Alerts) Delivered(state string) { a.delivered.WithLabelValues(state).Inc() }
