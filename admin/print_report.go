package admin

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/store"
)

// reportLabels are the label columns of a report grouped by g.
func reportLabels(g billing.GroupBy) []string {
	switch g {
	case billing.ByDay:
		return []string{"DAY"}
	case billing.ByModel:
		return []string{"MODEL"}
	case billing.ByKey:
		return []string{"KEY"}
	case billing.ByUser:
		return []string{"USER"}
	case billing.ByDayKey:
		return []string{"DAY", "KEY"}
	case billing.ByTeam:
		return []string{"TEAM"}
	case billing.ByTag:
		return []string{"TAG"}
	}
	return []string{"DAY", "MODEL"}
}

// rowLabels are the values of a row's label columns.
func rowLabels(g billing.GroupBy, r *billing.ReportRow) []string {
	switch g {
	case billing.ByDay:
		return []string{r.Day}
	case billing.ByModel:
		return []string{r.Model}
	case billing.ByKey:
		return []string{r.KeyID}
	case billing.ByUser:
		return []string{r.User}
	case billing.ByDayKey:
		return []string{r.Day, r.KeyID}
	case billing.ByTeam:
		return []string{orNone(r.Team)}
	case billing.ByTag:
		return []string{orNone(r.Tag)}
	}
	return []string{r.Day, r.Model}
}

// orNone shows an empty team or tag as "(none)".
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// costText shows a cost, or "unpriced" for the requests of unpriced
// models: never a zero cost with a blank currency.
func costText(priced bool, cost billing.Amount, currency string, unpriced int64) string {
	if !priced {
		return "unpriced"
	}
	s := cost.String() + " " + currency
	if unpriced > 0 {
		s += fmt.Sprintf(" + %d unpriced", unpriced)
	}
	return s
}

// PrintReport prints rep as a table: one line per row and one total line
// per currency. The requests of unpriced models are shown as "unpriced";
// when one currency is priced, they join its total line, so there is one
// total line.
func PrintReport(tw *tabwriter.Writer, g billing.GroupBy, rep *billing.Report) {
	labels := reportLabels(g)
	// CACHE WRITE counts every cache write, 1H the part written for an
	// hour; OUTPUT counts every output token, REASONING the part spent
	// reasoning.
	fmt.Fprintln(tw, strings.Join(labels, "\t")+"\tREQUESTS\tINPUT\tCACHE WRITE\t1H\tCACHE READ\tOUTPUT\tREASONING\tCOST\t")
	line := func(lbl []string, t *billing.Totals, cost string) {
		if t.UnpricedCharges > 0 {
			// Their cost lacks charges the price file has no rule for.
			cost += fmt.Sprintf(" (%d with unpriced charges)", t.UnpricedCharges)
		}
		u := t.Usage
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", strings.Join(lbl, "\t"), t.Requests,
			u.Input, u.CacheCreation, u.CacheCreation1h, u.CacheRead, u.Output, u.Reasoning, cost)
	}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		line(rowLabels(g, row), &row.Totals, costText(row.Priced, row.Cost, row.Currency, 0))
	}
	totalLabel := make([]string, len(labels))
	totalLabel[0] = "total"
	var priced []billing.ReportTotal
	var unpriced *billing.ReportTotal
	for i := range rep.Totals {
		if rep.Totals[i].Priced {
			priced = append(priced, rep.Totals[i])
		} else {
			unpriced = &rep.Totals[i]
		}
	}
	if len(priced) == 1 && unpriced != nil {
		t := priced[0].Totals
		t.Requests = store.AddSat(t.Requests, unpriced.Requests)
		t.Unpriced = store.AddSat(t.Unpriced, unpriced.Unpriced)
		t.Usage = t.Usage.Add(unpriced.Usage)
		line(totalLabel, &t, costText(true, t.Cost, priced[0].Currency, t.Unpriced))
		return
	}
	for i := range priced {
		line(totalLabel, &priced[i].Totals, costText(true, priced[i].Cost, priced[i].Currency, 0))
	}
	if unpriced != nil {
		line(totalLabel, &unpriced.Totals, costText(false, 0, "", 0))
	}
}

// newTable returns a tab writer for the command's tables.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// PrintBudgets prints the users and keys with limits as a table.
func PrintBudgets(w io.Writer, list []billing.BudgetEntry) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tID\tCURRENCY\tMONTHLY\tTOTAL\tRPM\tTPM\tPARALLEL\tSPENT THIS MONTH\tSPENT IN ALL")
	for _, e := range list {
		var l billing.Limits
		if e.Limits != nil {
			l = *e.Limits
		}
		month, total := "0", "0"
		if len(e.Spend) > 0 {
			var m, t []string
			for _, s := range e.Spend {
				m, t = append(m, s.Month.Short()+" "+s.Currency), append(t, s.Total.Short()+" "+s.Currency)
			}
			month, total = strings.Join(m, ", "), strings.Join(t, ", ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Scope, e.ID, orDash(l.Currency), limitText(l.Monthly), limitText(l.Total),
			rateText(l.RPM), rateText(l.TPM), rateText(l.MaxParallel), month, total)
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func limitText(a billing.Amount) string {
	if a == 0 {
		return "-"
	}
	return a.Short()
}

func rateText(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// PrintUsers prints users with their requests and spend as a table.
func PrintUsers(w io.Writer, users []billing.UserUsage) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tREQUESTS\tINPUT\tOUTPUT\tSPEND")
	for _, u := range users {
		var spend []string
		for _, s := range u.Spend {
			spend = append(spend, s.Amount.String()+" "+s.Currency)
		}
		if u.Unpriced > 0 {
			spend = append(spend, fmt.Sprintf("%d unpriced", u.Unpriced))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", u.User, u.Requests, u.Usage.PromptTotal(), u.Usage.Output, strings.Join(spend, " + "))
	}
	_ = tw.Flush()
}
