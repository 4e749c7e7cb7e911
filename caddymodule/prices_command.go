package caddymodule

import (
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
)

// pricesCommand is `caddy air prices`.
func pricesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prices [--json]",
		Short: "Shows the price table as loaded: tiers, cache multipliers, service tiers, task prices",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/prices", admin.PrintPrices)
		},
	}
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}
