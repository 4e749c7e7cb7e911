package airmetrics

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// dashboardPath is the Grafana dashboard shipped in the repository.
const dashboardPath = "../examples/grafana/caddy-air.json"

// promqlKeywords are identifiers of PromQL that are not metric names.
var promqlKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless", "inf", "nan"}

var (
	stringLit  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers   = regexp.MustCompile(`\{[^{}]*\}`)
	ranges     = regexp.MustCompile(`\[[^\[\]]*\]`)
	grouping   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	identifier = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	labelVals  = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)`)
)

// metricNames returns the metric names a PromQL expression selects:
// identifiers left once strings, label matchers, ranges and grouping
// clauses are removed, other than function names and keywords.
func metricNames(expr string) []string {
	if m := labelVals.FindStringSubmatch(expr); m != nil {
		return []string{m[1]}
	}
	s := stringLit.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, " ")
	s = ranges.ReplaceAllString(s, " ")
	s = grouping.ReplaceAllString(s, " ")
	var out []string
	for _, loc := range identifier.FindAllStringIndex(s, -1) {
		name := s[loc[0]:loc[1]]
		if loc[0] > 0 && (s[loc[0]-1] == '$' || s[loc[0]-1] >= '0' && s[loc[0]-1] <= '9' || s[loc[0]-1] == '.') {
			continue // a variable or part of a number (1e3)
		}
		if rest := strings.TrimLeft(s[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or an aggregation
		}
		if slices.Contains(promqlKeywords, strings.ToLower(name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// exported reports whether name is a series name of an exported family.
func exported(name string) bool {
	names := Names()
	if slices.Contains(names, name) {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(names, base) {
			return true
		}
	}
	return false
}

// dashboardQueries returns every PromQL expression of the dashboard: the
// panels' targets and the template variables' queries.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for i, tg := range p.Targets {
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out["variable "+v.Name] = q
		}
	}
	return out
}

// TestDashboardQueriesExportedMetrics: every metric the dashboard queries
// is one this package exports, and it shows what operators watch.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	used := map[string]bool{}
	for where, expr := range dashboardQueries(t) {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, n := range names {
			if !exported(n) {
				t.Errorf("%s: %q is not an exported metric (in %q)", where, n, expr)
			}
			used[n] = true
		}
	}
	for _, want := range []string{
		"air_requests_total", "gen_ai_server_time_to_first_token_seconds_bucket",
		"gen_ai_server_request_duration_seconds_bucket", "gen_ai_client_token_usage_sum", "air_cost_total",
		"air_upstream_retries_total", "air_open_streams", "air_ledger_lag_seconds",
	} {
		if !used[want] {
			t.Errorf("the dashboard does not chart %s", want)
		}
	}
}

func TestMetricNames(t *testing.T) {
	for i, tc := range []struct {
		expr string
		want []string
	}{
		{`sum by (provider, model) (rate(air_requests_total{provider=~"$provider"}[$__rate_interval]))`, []string{"air_requests_total"}},
		{`histogram_quantile(0.95, sum by (le) (rate(gen_ai_server_time_to_first_token_seconds_bucket[5m])))`, []string{"gen_ai_server_time_to_first_token_seconds_bucket"}},
		{`sum(rate(a_total[5m])) / on (x) group_left sum(rate(b_total{y="by(z)"}[5m]))`, []string{"a_total", "b_total"}},
		{`max(air_ledger_lag_seconds) > 1e3 and air_ledger_queue_depth`, []string{"air_ledger_lag_seconds", "air_ledger_queue_depth"}},
		{`label_values(air_requests_total{provider=~"$provider"}, model)`, []string{"air_requests_total"}},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("Test %d: metricNames(%s) = %v, want %v", i, tc.expr, got, tc.want)
		}
	}
	// An unknown name is caught.
	for _, n := range metricNames(`rate(air_request_total[5m])`) {
		if exported(n) {
			t.Errorf("%s counted as exported", n)
		}
	}
}

// TestDashboardTokenStackCountsEachTokenOnce: the stacked tokens panel
// leaves reasoning out (it is part of output), so its stack is the total
// of the ledger's tokens.
func TestDashboardTokenStackCountsEachTokenOnce(t *testing.T) {
	n := 0
	for where, expr := range dashboardQueries(t) {
		if !strings.Contains(expr, "gen_ai_client_token_usage_sum") || !strings.Contains(expr, "by (gen_ai_token_type)") {
			continue
		}
		n++
		if !strings.Contains(expr, `gen_ai_token_type!="reasoning"`) {
			t.Errorf("%s stacks reasoning on output, which includes it: %s", where, expr)
		}
	}
	if n == 0 {
		t.Fatal("no panel charts tokens by type")
	}
}
