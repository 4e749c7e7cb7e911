package admin

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
)

// PrintKeys writes ks as `caddy air keys list` prints them: a table, one
// key a line, its free-text fields made safe for a terminal, with each
// key's limits from limits (by key id; a key without any shows "-").
func PrintKeys(w io.Writer, ks []keys.Key, limits map[string]billing.Limits) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tNAME\tCREATED\tLAST USED\tEXPIRES\tSTATE\tLIMIT\tMODELS")
	for _, k := range ks {
		lastUsed, expires, models := "never", "-", "all"
		if k.LastUsedAt != nil {
			lastUsed = k.LastUsedAt.Format("2006-01-02 15:04")
		}
		if k.ExpiresAt != nil {
			expires = k.ExpiresAt.Format("2006-01-02 15:04")
		}
		if len(k.Models) > 0 {
			models = strings.Join(k.Models, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", terminalSafe(k.ID), terminalSafe(k.User), terminalSafe(k.Name),
			k.CreatedAt.Format("2006-01-02 15:04"), lastUsed, expires, k.State, limitsText(limits[k.ID]), terminalSafe(models))
	}
	return tw.Flush()
}

// limitsText is l in one column: its spend limits with their currency and
// its rate and concurrency limits, such as "5.00 USD total, 1.00
// USD/month, 60 rpm, 4 parallel", or "-".
func limitsText(l billing.Limits) string {
	var parts []string
	cur := l.Currency
	if cur != "" {
		cur = " " + cur
	}
	if l.Total > 0 {
		parts = append(parts, l.Total.Short()+cur+" total")
	}
	if l.Monthly > 0 {
		parts = append(parts, l.Monthly.Short()+cur+"/month")
	}
	if l.RPM > 0 {
		parts = append(parts, fmt.Sprintf("%d rpm", l.RPM))
	}
	if l.TPM > 0 {
		parts = append(parts, fmt.Sprintf("%d tpm", l.TPM))
	}
	if l.MaxParallel > 0 {
		parts = append(parts, fmt.Sprintf("%d parallel", l.MaxParallel))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// PrintBudgetStatus writes what `caddy air budget set|get|delete` prints:
// the limits of one user or key and its spend per currency.
func PrintBudgetStatus(w io.Writer, st billing.BudgetStatus) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var l billing.Limits
	if st.Limits != nil {
		l = *st.Limits
	}
	fmt.Fprintf(tw, "limits:\t%s\n", limitsText(l))
	if len(st.Spend) == 0 {
		fmt.Fprintf(tw, "spent:\tnothing yet\n")
	}
	for _, s := range st.Spend {
		fmt.Fprintf(tw, "spent (%s):\t%s in %s, %s in all, %s reserved\n", s.Currency, s.Month.Short(), st.Month, s.Total.Short(), s.Reserved.Short())
	}
	return tw.Flush()
}

// terminalSafe returns s with each control character (Unicode category
// Cc: NUL, tab, ESC, DEL, C1 controls…) and each byte of invalid UTF-8
// escaped as strconv.Quote escapes it, e.g. "\x1b", "\u009b": a name
// stored before the key service refused them cannot move the cursor,
// retitle or clear the terminal that lists it, nor break the table's
// columns. Other characters, printable or not ASCII, are kept.
func terminalSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsControl(r) || r == utf8.RuneError && n == 1 {
			q := strconv.Quote(s[i : i+n])
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
