package caddymodule

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/caddy-air/caddy-air/keys"
)

// printKeys writes ks as `caddy air keys list` prints them: a table, one
// key a line, its free-text fields made safe for a terminal.
func printKeys(w io.Writer, ks []keys.Key) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tUSER\tNAME\tCREATED\tLAST USED\tEXPIRES\tSTATE\tMODELS")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", terminalSafe(k.ID), terminalSafe(k.User), terminalSafe(k.Name),
			k.CreatedAt.Format("2006-01-02 15:04"), lastUsed, expires, k.State, terminalSafe(models))
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
