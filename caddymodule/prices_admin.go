package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/billing"
)

// pricesReport is the answer of GET /air/prices: the price table as
// loaded.
type pricesReport struct {
	// Source is the price file ("" when none is configured: every model
	// is unpriced).
	Source string `json:"source"`
	// Currency is the file's default currency.
	Currency string `json:"currency"`
	// Models are the models and their prices, exact ids first, then
	// globs.
	Models []billing.ModelPrices `json:"models"`
}

// handlePrices answers GET /air/prices: the price table of the running
// config, as the console's operators' page shows it.
func (Admin) handlePrices(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	app := running.Load()
	if app == nil {
		return apiErr(http.StatusServiceUnavailable, errors.New("the air app is not running: configure a global `air` option"))
	}
	rep := pricesReport{Source: app.Prices, Currency: app.cfg.Prices.Currency(), Models: app.cfg.Prices.Models()}
	if rep.Models == nil {
		rep.Models = []billing.ModelPrices{}
	}
	return writeAdminJSON(w, http.StatusOK, rep)
}

// pricesCommand is `caddy air prices`.
func pricesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prices [--json]",
		Short: "Shows the price table as loaded: tiers, cache multipliers, service tiers, task prices",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/prices", printPrices)
		},
	}
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}

// printPrices writes the price table, one line per model.
func printPrices(w io.Writer, rep *pricesReport) error {
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
