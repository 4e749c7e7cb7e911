package caddymodule

import (
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/billing"
)

func ledgerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger [--user <u>] [--key <id>] [--model <m>] [--outcome <o>] [--since <date>] [--until <date>] [--limit <n>] [--after <cursor>] [--newest-first] [--csv|--json]",
		Short: "Shows a page of ledger records (one user's, or every user's), or exports them all as CSV",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := flagQuery(cmd, "user", "key", "model", "outcome", "since", "until", "limit", "after")
			newest, _ := cmd.Flags().GetBool("newest-first")
			if desc, _ := cmd.Flags().GetBool("desc"); desc || newest {
				q.Set("order", "desc")
			}
			if asCSV, _ := cmd.Flags().GetBool("csv"); asCSV {
				q.Set("format", "csv")
				data, err := adminRaw(cmd, http.MethodGet, "/air/records?"+q.Encode(), nil)
				if err != nil {
					return err
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			return getAndPrint(cmd, "/air/records?"+q.Encode(), func(_ io.Writer, page *billing.RecordPage) error {
				admin.PrintRecords(cmd.OutOrStdout(), page)
				return nil
			})
		},
	}
	cmd.Flags().String("user", "", "Only this user (default: every user, user by user, over the last 31 days unless --since)")
	cmd.Flags().String("key", "", "Only this key id")
	cmd.Flags().String("model", "", "Only this model")
	cmd.Flags().String("outcome", "", "Only this outcome, e.g. ok, partial, upstream_error")
	cmd.Flags().String("since", "", "First day (YYYY-MM-DD) or time (RFC 3339), inclusive")
	cmd.Flags().String("until", "", "End day or time, exclusive")
	cmd.Flags().String("limit", "", fmt.Sprintf("Records per page, 1 to %d (default %d)", billing.MaxPage, billing.DefaultPage))
	cmd.Flags().String("after", "", "The cursor a previous page printed, to show the next page")
	cmd.Flags().Bool("newest-first", false, "Newest records first (each user's, in a search of every user); --after then pages toward older ones")
	cmd.Flags().Bool("desc", false, "The same as --newest-first")
	cmd.Flags().Bool("csv", false, "Export every matching record as CSV")
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}
