package caddymodule

import (
	"fmt"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/audit"
)

// auditCommand is `caddy air audit`.
func auditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit [--since <when>] [--until <when>] [--actor <a>] [--action <a>] [--target <id>] [--limit <n>] [--before <cursor>] [--csv|--jsonl|--json]",
		Short: "Shows the audit trail (who changed which key, budget or limit, when and from where), newest first, or exports it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := flagQuery(cmd, "since", "until", "actor", "action", "target", "limit", "before")
			for _, f := range []string{audit.FormatCSV, audit.FormatJSONL} {
				if on, _ := cmd.Flags().GetBool(f); on {
					q.Set("format", f)
					data, err := adminRaw(cmd, http.MethodGet, "/air/audit?"+q.Encode(), nil)
					if err != nil {
						return err
					}
					_, err = cmd.OutOrStdout().Write(data)
					return err
				}
			}
			return getAndPrint(cmd, "/air/audit?"+q.Encode(), admin.PrintAudit)
		},
	}
	cmd.Flags().String("since", "", "From this day (YYYY-MM-DD), time (RFC 3339) or duration ago (24h, 7d), inclusive")
	cmd.Flags().String("until", "", "Until this day, time or duration ago, exclusive")
	cmd.Flags().String("actor", "", "Only changes by this actor: a console user, admin-api or cli")
	cmd.Flags().String("action", "", "Only this action, e.g. key.create, key.revoke, budget.set")
	cmd.Flags().String("target", "", "Only changes of this key id or user")
	cmd.Flags().String("limit", "", fmt.Sprintf("Entries per page, 1 to %d (default %d)", admin.MaxAuditPage, admin.DefaultAuditPage))
	cmd.Flags().String("before", "", "The cursor a previous page printed, to show the next (older) page")
	cmd.Flags().Bool("csv", false, "Export every matching entry as CSV")
	cmd.Flags().Bool("jsonl", false, "Export every matching entry as JSON Lines")
	cmd.Flags().Bool("json", false, "Print the page as JSON")
	return cmd
}
