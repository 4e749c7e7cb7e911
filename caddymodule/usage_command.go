package caddymodule

import (
	"io"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/billing"
)

func usersCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "users [--month <YYYY-MM>] [--json]",
		Short: "Lists the users of a month with their requests and spend, top spenders first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			month, _ := cmd.Flags().GetString("month")
			return getAndPrint(cmd, "/air/users?month="+url.QueryEscape(month), func(w io.Writer, out *[]billing.UserUsage) error {
				admin.PrintUsers(w, *out)
				return nil
			})
		},
	}
	cmd.Flags().String("month", "", "The month, as YYYY-MM (default: this month, UTC)")
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}
