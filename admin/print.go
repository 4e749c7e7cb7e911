package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/routing"
)

// PrintPrices writes the price table, one line per model.
func PrintPrices(w io.Writer, rep *PricesReport) error {
	if rep.Source == "" {
		fmt.Fprintln(w, "no price file: every model is unpriced")
		return nil
	}
	fmt.Fprintf(w, "%s (default currency %s)\n", rep.Source, rep.Currency)
	tw := newTable(w)
	fmt.Fprintln(tw, "MODEL\tCURRENCY\tTIERS (UP TO: INPUT/OUTPUT PER 1M)\tCACHE (5M/1H/READ)\tSERVICE TIERS\tTASK PRICE\tCHARGES")
	for _, m := range rep.Models {
		var tiers []string
		for _, t := range m.Tiers {
			upTo := "rest"
			if t.UpTo > 0 {
				upTo = fmt.Sprint(t.UpTo)
			}
			tiers = append(tiers, upTo+": "+t.Input+"/"+t.Output)
		}
		if m.Embedding && len(m.Tiers) == 1 {
			tiers = []string{"embedding " + m.Tiers[0].Input}
		}
		cache, task := "-", "-"
		if len(m.Tiers) > 0 {
			cache = m.Cache.Creation + "/" + m.Cache.Creation1h + "/" + m.Cache.Read
		}
		if m.Task != "" {
			task = m.TaskPrice + " per " + strings.TrimPrefix(m.Task, "video_")
		}
		var st []string
		for name, mult := range m.ServiceTiers {
			st = append(st, name+" x"+mult)
		}
		sort.Strings(st)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Pattern, m.Currency, orDash(strings.Join(tiers, ", ")), cache,
			orDash(strings.Join(st, ", ")), task, chargesText(m.Charges))
	}
	return tw.Flush()
}

// chargesText shows a model's prices of audio and image tokens (per 1M)
// and tool calls (per call), "-" when it has none.
func chargesText(c *billing.ChargePrices) string {
	if c == nil {
		return "-"
	}
	var out []string
	for _, p := range [...][2]string{{"audio in", c.AudioInput}, {"audio out", c.AudioOutput},
		{"image in", c.ImageInput}, {"image out", c.ImageOutput}} {
		if p[1] != "" {
			out = append(out, p[0]+" "+p[1])
		}
	}
	var tools []string
	for name, price := range c.Tools {
		tools = append(tools, name+" "+price)
	}
	sort.Strings(tools)
	return strings.Join(append(out, tools...), ", ")
}

// PrintProviders writes ups as a table; UNTIL is how long from now an
// upstream waits on its cooldown, open breaker or rejected key.
func PrintProviders(w io.Writer, ups []routing.UpstreamStatus, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tDEPLOYMENT\tBASE URL\tKEY\tBREAKER\tSTATE\tUNTIL\tIN FLIGHT\tLATENCY\tFAILED")
	for _, u := range ups {
		state := "available"
		if !u.Available {
			state = u.Reason
		}
		until := "-"
		if u.Until != nil {
			until = "in " + u.Until.Sub(now).Round(time.Second).String()
		}
		latency := "-"
		if u.LatencySeconds > 0 {
			latency = time.Duration(u.LatencySeconds * float64(time.Second)).Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t#%d\t%s\t%s\t%s\t%d\t%s\t%d/%d\n", u.Provider, u.Deployment, u.BaseURL, u.Key,
			u.Breaker, state, until, u.InFlight, latency, u.Failures, u.Attempts)
	}
	return tw.Flush()
}

// PrintAudit prints a page of the trail as a table.
func PrintAudit(w io.Writer, p *AuditPage) error {
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

// PrintRecords prints a page of records as a table, and the cursor of the
// next page.
func PrintRecords(w io.Writer, p *billing.RecordPage) {
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

// PrintTeam prints a team: its name, models, members, limits and spend.
func PrintTeam(w io.Writer, t *TeamView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "team:\t%s\n", terminalSafe(t.Name))
	models := "all"
	if len(t.Models) > 0 {
		models = terminalSafe(strings.Join(t.Models, ","))
	}
	fmt.Fprintf(tw, "models:\t%s\n", models)
	members := make([]string, 0, len(t.Members))
	for _, m := range t.Members {
		s := terminalSafe(m.User)
		if m.Admin {
			s += " (admin)"
		}
		members = append(members, s)
	}
	if len(members) == 0 {
		members = append(members, "none")
	}
	fmt.Fprintf(tw, "members:\t%s\n", strings.Join(members, ", "))
	if err := tw.Flush(); err != nil {
		return err
	}
	return PrintBudgetStatus(w, t.Budget)
}

// PrintJSON writes v to w as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
