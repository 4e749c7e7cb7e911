package console

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/caddy-air/caddy-air/billing"
)

// chart is a stacked bar chart rendered as SVG by the server: one bar per
// day, one segment per series (a model or a key).
type chart struct {
	// Title names what the bars measure.
	Title string
	// Width and Height are the SVG's size in user units.
	Width, Height float64
	// Bars are the segments; Ticks the y axis; Days the x labels.
	Bars   []bar
	Ticks  []tick
	Days   []label
	Legend []legendItem
	// Empty is set when there is nothing to draw.
	Empty bool
}

// bar is one segment of a day's bar.
type bar struct {
	X, Y, W, H float64
	Fill, Tip  string
}

// tick is a y-axis line and its label.
type tick struct {
	Y     float64
	Label string
}

// label is an x-axis label.
type label struct {
	X    float64
	Text string
}

// legendItem names a series' colour.
type legendItem struct {
	Name, Fill string
}

// palette holds the series colours (readable on white, colour-blind safe).
var palette = []string{"#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb", "#332288"}

// Chart geometry, in SVG user units.
const (
	chartW, chartH  = 760.0, 220.0
	padL, padB, pad = 70.0, 28.0, 8.0
)

// bySeries names the series a report row belongs to.
type bySeries struct {
	// Name is what the charts' titles say they are split by.
	Name string
	// Of is a row's series.
	Of func(*billing.ReportRow) string
}

// Series of the usage charts: the rows of a report by day and model, and
// of one by day and key.
var (
	seriesModel = bySeries{"model", func(r *billing.ReportRow) string { return r.Model }}
	seriesKey   = bySeries{"key", func(r *billing.ReportRow) string { return r.KeyID }}
	seriesUser  = bySeries{"user", func(r *billing.ReportRow) string { return r.User }}
	seriesTeam  = bySeries{"team", func(r *billing.ReportRow) string { return orNone(r.Team, "(no team)") }}
	seriesTag   = bySeries{"tag", func(r *billing.ReportRow) string { return orNone(r.Tag, "(untagged)") }}
)

// usageCharts draws the report's cost (in its first priced currency) and
// tokens per day from since to until, split by s.
func usageCharts(rep *billing.Report, since, until time.Time, s bySeries) (cost, tokens *chart) {
	currency := ""
	for _, t := range rep.Totals {
		if t.Currency != "" {
			currency = t.Currency
			break
		}
	}
	var models []string
	for i := range rep.Rows {
		if m := s.Of(&rep.Rows[i]); !slices.Contains(models, m) {
			models = append(models, m)
		}
	}
	slices.Sort(models)
	var days []string
	for d := since; !d.After(until); d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(dayLayout))
	}
	costOf := func(row *billing.ReportRow) (float64, string) {
		if row.Currency != currency || currency == "" {
			return 0, ""
		}
		return float64(row.Cost) / 1e9, row.Cost.String() + " " + currency
	}
	tokensOf := func(row *billing.ReportRow) (float64, string) {
		n := row.Usage.Total()
		return float64(n), fmt.Sprintf("%d tokens", n)
	}
	title := "Cost per day by " + s.Name
	if currency != "" {
		title += " (" + currency + ")"
	}
	return stacked(title, rep, days, models, s, costOf), stacked("Tokens per day by "+s.Name, rep, days, models, s, tokensOf)
}

// stacked builds a chart whose segments, one per series, measure value.
func stacked(title string, rep *billing.Report, days, models []string, s bySeries, value func(*billing.ReportRow) (float64, string)) *chart {
	c := &chart{Title: title, Width: chartW, Height: chartH}
	dayIdx := map[string]int{}
	for i, d := range days {
		dayIdx[d] = i
	}
	sums := make([]float64, len(days))
	type seg struct {
		day   int
		model string
		v     float64
		tip   string
	}
	var segs []seg
	for i := range rep.Rows {
		row := &rep.Rows[i]
		di, ok := dayIdx[row.Day]
		if !ok {
			continue
		}
		v, tip := value(row)
		if v <= 0 {
			continue
		}
		name := s.Of(row)
		segs = append(segs, seg{di, name, v, row.Day + " " + name + ": " + tip})
		sums[di] += v
	}
	top := slices.Max(append(sums, 0))
	if top == 0 || len(days) == 0 {
		c.Empty = true
		return c
	}
	top = niceCeil(top)
	plotW, plotH := chartW-padL-pad, chartH-padB-pad
	slot := plotW / float64(len(days))
	barW := math.Max(slot*0.7, 1)
	colour := map[string]string{}
	for i, m := range models {
		colour[m] = palette[i%len(palette)]
		c.Legend = append(c.Legend, legendItem{m, colour[m]})
	}
	base := make([]float64, len(days))
	for _, s := range segs {
		h := s.v / top * plotH
		x := padL + float64(s.day)*slot + (slot-barW)/2
		base[s.day] += h
		c.Bars = append(c.Bars, bar{X: round2(x), Y: round2(pad + plotH - base[s.day]), W: round2(barW), H: round2(math.Max(h, 0.5)), Fill: colour[s.model], Tip: s.tip})
	}
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		c.Ticks = append(c.Ticks, tick{Y: round2(pad + plotH - plotH*float64(i)/4), Label: trimFloat(v)})
	}
	every := max(1, len(days)/8)
	for i := 0; i < len(days); i += every {
		c.Days = append(c.Days, label{X: round2(padL + float64(i)*slot + slot/2), Text: days[i][5:]})
	}
	return c
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// round2 rounds to two decimals, for compact SVG.
func round2(v float64) float64 { return math.Round(v*100) / 100 }

// trimFloat formats an axis value to three significant digits, without
// an exponent or needless zeros.
func trimFloat(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// orNone is s, or none when s is empty.
func orNone(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
