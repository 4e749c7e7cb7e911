package caddymodule

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/store"
)

// logRequestsCommand is `caddy air keys|team log-requests <id> on|off`:
// it PATCHes log_requests of the key or team at pathOf(id).
func logRequestsCommand(what string, pathOf func(string) string) *cobra.Command {
	return &cobra.Command{
		Use:       "log-requests <" + what + "> on|off",
		Short:     "Switches request logs (stored request and response bodies) of a " + what + " on or off",
		Args:      cobra.ExactArgs(2),
		ValidArgs: []string{"on", "off"},
		RunE: func(cmd *cobra.Command, args []string) error {
			var on bool
			switch args[1] {
			case "on":
				on = true
			case "off":
			default:
				return fmt.Errorf("want on or off, not %q", args[1])
			}
			body, _ := json.Marshal(map[string]bool{"log_requests": on})
			if err := adminCall(cmd, http.MethodPatch, pathOf(args[0]), body, nil); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "request logs of %s %s: %s\n", what, args[0], args[1])
			return nil
		},
	}
}

// requestLogCommand is `caddy air request-log <record id>`: it prints the
// stored request log of a ledger record as JSON.
func requestLogCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "request-log <record id>",
		Short: "Prints the stored request and response bodies of a ledger record (if its key or team has request logs on)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var l store.RequestLog
			if err := adminCall(cmd, http.MethodGet, "/air/request-logs/"+url.PathEscape(args[0]), nil, &l); err != nil {
				return err
			}
			return admin.PrintJSON(cmd.OutOrStdout(), l)
		},
	}
}
