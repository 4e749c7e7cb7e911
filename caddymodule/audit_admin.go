package caddymodule

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/audit"
	"github.com/caddy-air/caddy-air/store"
)

// Page sizes of GET /air/audit.
const (
	defaultAuditPage = 100
	maxAuditPage     = 1000
)

// auditPage is the answer of GET /air/audit.
type auditPage struct {
	// Entries are the page's entries, newest first.
	Entries []audit.JSONEntry `json:"entries"`
	// Next is the cursor of the next (older) page, for before=; absent
	// on the last page.
	Next string `json:"next,omitempty"`
}

// parseAuditWhen reads since or until: a date, an RFC 3339 time, or a
// duration before now such as "24h" or "7d".
func parseAuditWhen(s string, now time.Time) (time.Time, error) {
	if d, err := caddy.ParseDuration(s); err == nil && s != "" {
		return now.Add(-d), nil
	}
	return parseWhen(s)
}

// auditQuery reads the filters of GET /air/audit.
func auditQuery(q url.Values) (audit.Query, error) {
	aq := audit.Query{Limit: defaultAuditPage}
	aq.Actor, aq.Action, aq.TargetID, aq.Before = q.Get("actor"), q.Get("action"), q.Get("target"), q.Get("before")
	now := time.Now()
	var err error
	if aq.Since, err = parseAuditWhen(q.Get("since"), now); err != nil {
		return aq, err
	}
	if aq.Until, err = parseAuditWhen(q.Get("until"), now); err != nil {
		return aq, err
	}
	if aq.Before != "" {
		if _, _, err := store.ParseAuditCursor(aq.Before); err != nil {
			return aq, err
		}
	}
	if s := q.Get("limit"); s != "" {
		if aq.Limit, err = strconv.Atoi(s); err != nil || aq.Limit < 1 || aq.Limit > maxAuditPage {
			return aq, fmt.Errorf("bad limit %q: want 1 to %d", s, maxAuditPage)
		}
	}
	return aq, nil
}

// handleAudit answers GET /air/audit: a page of the audit trail, newest
// first, or with format=csv|jsonl every entry the filters select.
func (Admin) handleAudit(w http.ResponseWriter, r *http.Request) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	q, err := auditQuery(r.URL.Query())
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	switch f := r.URL.Query().Get("format"); f {
	case "":
	case audit.FormatCSV, audit.FormatJSONL:
		ct := "text/csv; charset=utf-8"
		if f == audit.FormatJSONL {
			ct = "application/jsonl"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Disposition", `attachment; filename="audit.`+f+`"`)
		// Once the first line is out, a failure can only cut the export short.
		return st.Audit.Export(r.Context(), q.AuditQuery, f, w)
	default:
		return apiErr(http.StatusBadRequest, fmt.Errorf("bad format %q: want csv or jsonl", f))
	}
	p, err := st.Audit.List(r.Context(), q)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeAdminJSON(w, http.StatusOK, auditPage{Entries: audit.JSONEntries(p.Entries), Next: p.Next})
}

// auditCommand is `caddy air audit`.
func auditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit [--since <when>] [--until <when>] [--actor <a>] [--action <a>] [--target <id>] [--limit <n>] [--before <cursor>] [--csv|--jsonl|--json]",
		Short: "Shows the audit trail (who changed which key, budget or limit, when and from where), newest first, or exports it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for _, f := range []string{"since", "until", "actor", "action", "target", "limit", "before"} {
				if v, _ := cmd.Flags().GetString(f); v != "" {
					q.Set(f, v)
				}
			}
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
			return getAndPrint(cmd, "/air/audit?"+q.Encode(), printAudit)
		},
	}
	cmd.Flags().String("since", "", "From this day (YYYY-MM-DD), time (RFC 3339) or duration ago (24h, 7d), inclusive")
	cmd.Flags().String("until", "", "Until this day, time or duration ago, exclusive")
	cmd.Flags().String("actor", "", "Only changes by this actor: a console user, admin-api or cli")
	cmd.Flags().String("action", "", "Only this action, e.g. key.create, key.revoke, budget.set")
	cmd.Flags().String("target", "", "Only changes of this key id or user")
	cmd.Flags().String("limit", "", fmt.Sprintf("Entries per page, 1 to %d (default %d)", maxAuditPage, defaultAuditPage))
	cmd.Flags().String("before", "", "The cursor a previous page printed, to show the next (older) page")
	cmd.Flags().Bool("csv", false, "Export every matching entry as CSV")
	cmd.Flags().Bool("jsonl", false, "Export every matching entry as JSON Lines")
	cmd.Flags().Bool("json", false, "Print the page as JSON")
	return cmd
}

// printAudit prints a page of the trail as a table.
func printAudit(w io.Writer, p *auditPage) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tVIA\tFROM\tACTION\tTARGET\tBEFORE\tAFTER")
	for _, e := range p.Entries {
		actor := e.Actor
		if e.Identity != "" {
			actor += " (" + e.Identity + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s %s\t%s\t%s\n", e.Time.Format(time.RFC3339), actor, e.Via, dash(e.ClientIP),
			e.Action, e.TargetType, e.TargetID, dash(string(e.Before)), dash(string(e.After)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if p.Next != "" {
		fmt.Fprintf(w, "more: --before %s\n", p.Next)
	}
	return nil
}

// dash returns s, or "-" when it is empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
