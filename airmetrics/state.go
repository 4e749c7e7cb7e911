package airmetrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// State is what the gauges read at scrape time: the ledger writer's queue
// and the storage.
type State struct {
	// LedgerQueued is the number of records waiting for the ledger writer.
	LedgerQueued int
	// LedgerLagSeconds is the age of the oldest record waiting for it.
	LedgerLagSeconds float64
	// LedgerUnreadable is the number of damaged regions of the ledger's
	// storage that reads skip.
	LedgerUnreadable int
	// StoreBytes is the space the storage directory takes on disk.
	StoreBytes int64
	// FreeBytes is the free space of the storage's file system.
	FreeBytes int64
	// MarginBytes is the free space kept before billable work is refused.
	MarginBytes int64
	// RequestLogsDropped counts the request logs dropped because their
	// queue was full; RequestLogsFailed those the store refused.
	RequestLogsDropped, RequestLogsFailed int64
}

// stateCollector reports State at scrape time.
type stateCollector struct {
	source                                      atomic.Pointer[func() (State, bool)]
	queued, lag, unreadable, size, free, margin *prometheus.Desc
	logsDropped, logsFailed                     *prometheus.Desc
}

func newStateCollector() *stateCollector {
	return &stateCollector{
		queued: prometheus.NewDesc("air_ledger_queue_depth", "Ledger records waiting for the writer.", nil, nil),
		lag:    prometheus.NewDesc("air_ledger_lag_seconds", "Age of the oldest ledger record waiting for the writer (0 when none waits).", nil, nil),
		unreadable: prometheus.NewDesc("air_ledger_unreadable_regions", "Damaged regions of the ledger's journal that reads skip; "+
			"their records are missing from listings, not from usage or spend (see the log for the files).", nil, nil),
		size:        prometheus.NewDesc("air_store_size_bytes", "Space the storage directory takes on disk (store, ledger journal, media).", nil, nil),
		free:        prometheus.NewDesc("air_store_free_bytes", "Free space of the storage's file system.", nil, nil),
		margin:      prometheus.NewDesc("air_store_free_margin_bytes", "Free space below which new billable requests are refused.", nil, nil),
		logsDropped: prometheus.NewDesc("air_request_logs_dropped_total", "Request logs not stored because their queue was full.", nil, nil),
		logsFailed:  prometheus.NewDesc("air_request_logs_failed_total", "Request logs the store refused.", nil, nil),
	}
}

// SetStateSource sets the function the scrape-time gauges read; it reports
// false while there is no started state (the gauges are then absent).
func (m *Metrics) SetStateSource(f func() (State, bool)) { m.state.source.Store(&f) }

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.queued, c.lag, c.unreadable, c.size, c.free, c.margin, c.logsDropped, c.logsFailed} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.source.Load()
	if f == nil {
		return
	}
	s, ok := (*f)()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(s.LedgerQueued))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, s.LedgerLagSeconds)
	ch <- prometheus.MustNewConstMetric(c.unreadable, prometheus.GaugeValue, float64(s.LedgerUnreadable))
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(s.StoreBytes))
	ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(s.FreeBytes))
	ch <- prometheus.MustNewConstMetric(c.margin, prometheus.GaugeValue, float64(s.MarginBytes))
	ch <- prometheus.MustNewConstMetric(c.logsDropped, prometheus.CounterValue, float64(s.RequestLogsDropped))
	ch <- prometheus.MustNewConstMetric(c.logsFailed, prometheus.CounterValue, float64(s.RequestLogsFailed))
}
