package caddymodule

import (
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
)

// providersCommand is `caddy air providers`.
func providersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers [--json]",
		Short: "Shows each upstream's breaker, cooldown, requests in flight and latency",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/providers", func(w io.Writer, rep *admin.ProvidersReport) error {
				return admin.PrintProviders(w, rep.Upstreams, time.Now())
			})
		},
	}
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}
