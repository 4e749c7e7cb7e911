package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
)

// recordQuery reads a billing.RecordQuery from the parameters user, key,
// model, outcome, since, until, after, limit and order (asc, the default,
// or desc: newest first).
func recordQuery(q url.Values) (billing.RecordQuery, error) {
	rq := billing.RecordQuery{User: q.Get("user"), KeyID: q.Get("key"), Model: q.Get("model"), Outcome: q.Get("outcome"), After: q.Get("after")}
	switch q.Get("order") {
	case "", "asc":
	case "desc":
		rq.Desc = true
	default:
		return rq, fmt.Errorf("bad order %q: want asc or desc", q.Get("order"))
	}
	var err error
	if rq.Since, rq.Until, err = parseRange(q); err != nil {
		return rq, err
	}
	if s := q.Get("limit"); s != "" {
		if rq.Limit, err = strconv.Atoi(s); err != nil || rq.Limit < 1 || rq.Limit > billing.MaxPage {
			return rq, fmt.Errorf("bad limit %q: want 1 to %d", s, billing.MaxPage)
		}
	}
	return rq, nil
}

// handleRecords serves GET /air/records?user=…: a page of one user's
// ledger records ({"records","has_more","next"}), or with format=csv every
// matching record as CSV. Without a user it searches every user's records
// (searchRecords).
func (Admin) handleRecords(w http.ResponseWriter, r *http.Request) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	rq, err := recordQuery(q)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	err = st.Ledger.Flush(ctx)
	cancel()
	if err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	switch q.Get("format") {
	case "csv":
		w.Header().Set("Content-Type", "text/csv; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="ledger.csv"`)
		// Once rows are written the status is sent: a failure later ends
		// the body early, and is logged by the admin server.
		return exportRecords(r.Context(), st, rq, w)
	case "", "json":
		page, err := searchRecords(r.Context(), st, rq)
		if err != nil {
			return apiErr(http.StatusBadRequest, err)
		}
		return writeAdminJSON(w, http.StatusOK, page)
	default:
		return apiErr(http.StatusBadRequest, fmt.Errorf("unknown format %q: use json or csv", q.Get("format")))
	}
}

// searchRecords reads a page of the records q selects: one user's pages
// as UserRecords reads them; without a user, every user's, as
// SearchRecords pages them, and with a key that names an API key only
// that key's owner's. The admin API and the console's operators search
// with it.
func searchRecords(ctx context.Context, st *gateway.Shared, q billing.RecordQuery) (*billing.RecordPage, error) {
	if q.User != "" {
		return st.Ledger.UserRecords(ctx, q)
	}
	if err := ownerOfKey(ctx, st, &q); err != nil {
		return nil, err
	}
	return st.Ledger.SearchRecords(ctx, q)
}

// exportRecords writes every record q selects as CSV, as searchRecords
// pages them.
func exportRecords(ctx context.Context, st *gateway.Shared, q billing.RecordQuery, w io.Writer) error {
	if q.User == "" {
		if err := ownerOfKey(ctx, st, &q); err != nil {
			return err
		}
		if q.User != "" {
			// The owner's search, with SearchRecords' cursor.
			q.After = ""
		}
	}
	return st.Ledger.ExportCSV(ctx, q, w)
}

// ownerOfKey sets the user of a search without one to the owner of its
// key, when the key is an API key (the playground's "console" is not):
// a key's records are its owner's, so the search reads one user.
func ownerOfKey(ctx context.Context, st *gateway.Shared, q *billing.RecordQuery) error {
	if q.KeyID == "" || q.User != "" {
		return nil
	}
	all, err := st.Keys.List(ctx, "")
	if err != nil {
		return err
	}
	for _, k := range all {
		if k.ID == q.KeyID {
			q.User = k.User
			return nil
		}
	}
	return nil
}

func ledgerCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger [--user <u>] [--key <id>] [--model <m>] [--outcome <o>] [--since <date>] [--until <date>] [--limit <n>] [--after <cursor>] [--newest-first] [--csv|--json]",
		Short: "Shows a page of ledger records (one user's, or every user's), or exports them all as CSV",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for _, f := range []string{"user", "key", "model", "outcome", "since", "until", "limit", "after"} {
				if v, _ := cmd.Flags().GetString(f); v != "" {
					q.Set(f, v)
				}
			}
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
				printRecords(cmd, page)
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

// printRecords prints a page of records as a table, and the cursor of the
// next page.
func printRecords(cmd *cobra.Command, p *billing.RecordPage) {
	w := cmd.OutOrStdout()
	tw := newTable(w)
	fmt.Fprintln(tw, "TIME\tID\tUSER\tKEY\tMODEL\tOUTCOME\tSTATUS\tLATENCY\tINPUT\tOUTPUT\tCOST")
	for _, r := range p.Records {
		latency := "-" // not measured
		if r.DurationMillis > 0 {
			latency = (time.Duration(r.DurationMillis) * time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%s\n", r.Time.Format(time.RFC3339), r.ID, r.User, r.KeyID, r.Model, r.Outcome,
			r.Status, latency, r.Usage.PromptTotal(), r.Usage.Output, costText(r.Priced, r.Cost, r.Currency, 0))
	}
	_ = tw.Flush()
	if p.HasMore {
		fmt.Fprintf(w, "more: --after %s\n", p.Next)
	}
}
