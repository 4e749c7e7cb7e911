package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/routing"
)

// providersReport is the answer of GET /air/providers.
type providersReport struct {
	// Upstreams is the state of every upstream (deployment × base URL ×
	// key) of the running config, by provider, deployment, base URL and
	// key index. Keys themselves are never shown.
	Upstreams []routing.UpstreamStatus `json:"upstreams"`
}

// handleProviders answers GET /air/providers: the routing state of every
// upstream of the running config (breaker, cooldown, requests in flight,
// latency).
func (Admin) handleProviders(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	app := running.Load()
	if app == nil || app.Router() == nil {
		return apiErr(http.StatusServiceUnavailable, errors.New("the air app is not running: configure a global `air` option"))
	}
	return writeAdminJSON(w, http.StatusOK, providersReport{Upstreams: app.Router().Status()})
}

// providersCommand is `caddy air providers`.
func providersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers [--json]",
		Short: "Shows each upstream's breaker, cooldown, requests in flight and latency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/providers", func(w io.Writer, rep *providersReport) error {
				return printProviders(w, rep.Upstreams, time.Now())
			})
		},
	}
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}

// printProviders writes ups as a table; UNTIL is how long from now an
// upstream waits on its cooldown, open breaker or rejected key.
func printProviders(w io.Writer, ups []routing.UpstreamStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tDEPLOYMENT\tBASE URL\tKEY\tBREAKER\tSTATE\tUNTIL\tIN FLIGHT\tLATENCY\tFAILED")
	for _, u := range ups {
		state := "available"
		if !u.Available {
			state = u.Reason
		}
		until := "-"
		if u.Until != nil {
			until = "in " + u.Until.Sub(now).Round(time.Second).String()
		}
		latency := "-"
		if u.LatencySeconds > 0 {
			latency = time.Duration(u.LatencySeconds * float64(time.Second)).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t#%d\t%s\t%s\t%s\t%d\t%s\t%d/%d\n", u.Provider, u.Deployment, u.BaseURL, u.Key,
			u.Breaker, state, until, u.InFlight, latency, u.Failures, u.Attempts)
	}
	return tw.Flush()
}
