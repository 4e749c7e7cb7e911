package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/gateway"
	"github.com/caddy-air/caddy-air/store"
)

// billingRoutes are the admin routes over the ledger and budgets:
//
//	GET /air/usage?by=&user=&key=&model=&team=&tag=&since=&until= → the usage report, by day and model or by one of day, model, key, user, team, tag
//	GET /air/users?month=YYYY-MM                        → users with requests and spend, top spenders first
//	GET /air/ledger?user=&key=&since=&until=&limit=&flush=1 → ledger records, in the order they were written
//	GET /air/records?user=&key=&model=&outcome=&since=&until=&limit=&after=[&format=csv] → a page of one user's records (every user's without user), or all as CSV
//	GET /air/budgets/                                   → every user, key and team with limits
//	PUT|GET|DELETE /air/budgets/<user|key|team>/<id>    → spend and rate limits
func (a Admin) billingRoutes() []caddy.AdminRoute {
	return []caddy.AdminRoute{
		{Pattern: "/air/usage", Handler: caddy.AdminHandlerFunc(a.handleUsage)},
		{Pattern: "/air/users", Handler: caddy.AdminHandlerFunc(a.handleUsers)},
		{Pattern: "/air/records", Handler: caddy.AdminHandlerFunc(a.handleRecords)},
		{Pattern: "/air/ledger", Handler: caddy.AdminHandlerFunc(a.handleLedger)},
		{Pattern: "/air/budgets/", Handler: caddy.AdminHandlerFunc(a.handleBudget)},
	}
}

// parseWhen reads a since/until parameter: RFC 3339 or a date.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q: want YYYY-MM-DD or RFC 3339", s)
	}
	return t, nil
}

// parseRange reads the since and until parameters of q.
func parseRange(q url.Values) (since, until time.Time, err error) {
	if since, err = parseWhen(q.Get("since")); err != nil {
		return
	}
	until, err = parseWhen(q.Get("until"))
	return
}

// readState checks that r is a GET and returns the running app's state.
func readState(r *http.Request) (*gateway.Shared, error) {
	if r.Method != http.MethodGet {
		return nil, apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
	return startedState()
}

func (Admin) handleUsage(w http.ResponseWriter, r *http.Request) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := billing.ReportFilter{User: q.Get("user"), KeyID: q.Get("key"), Model: q.Get("model"), Team: q.Get("team"), Tag: q.Get("tag")}
	if f.Since, f.Until, err = parseRange(q); err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if f.By, err = billing.ParseGroupBy(q.Get("by")); err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if err := st.Ledger.Flush(r.Context()); err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	rep, err := st.Ledger.Report(r.Context(), f)
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeAdminJSON(w, http.StatusOK, rep)
}

func (Admin) handleUsers(w http.ResponseWriter, r *http.Request) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	month := r.URL.Query().Get("month")
	if month == "" {
		month = store.MonthOf(time.Now())
	}
	if err := st.Ledger.Flush(r.Context()); err != nil {
		return apiErr(http.StatusServiceUnavailable, err)
	}
	users, err := st.Ledger.Users(r.Context(), month)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	if users == nil {
		users = []billing.UserUsage{}
	}
	return writeAdminJSON(w, http.StatusOK, users)
}

func (Admin) handleLedger(w http.ResponseWriter, r *http.Request) error {
	st, err := readState(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	since, until, err := parseRange(q)
	if err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	limit := 1000
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return apiErr(http.StatusBadRequest, fmt.Errorf("bad limit %q", s))
		}
	}
	if q.Get("flush") != "" {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := st.Ledger.Flush(ctx); err != nil {
			return apiErr(http.StatusServiceUnavailable, err)
		}
	}
	user, keyID := q.Get("user"), q.Get("key")
	out := []billing.Record{}
	err = st.Ledger.Records(r.Context(), since, until, func(rec billing.Record) error {
		if (user != "" && rec.User != user) || (keyID != "" && rec.KeyID != keyID) {
			return nil
		}
		out = append(out, rec)
		if len(out) >= limit {
			return store.ErrStop
		}
		return nil
	})
	if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	return writeAdminJSON(w, http.StatusOK, out)
}

// handleBudget serves /air/budgets/<user|key>/<id>: PUT sets the limits
// (billing.Limits as JSON), GET shows limits and spend, DELETE lifts them.
func (Admin) handleBudget(w http.ResponseWriter, r *http.Request) error {
	st, err := startedState()
	if err != nil {
		return err
	}
	rest := strings.TrimPrefix(r.URL.Path, "/air/budgets/")
	if rest == "" {
		if r.Method != http.MethodGet {
			return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
		}
		list, err := st.Budgets.List(r.Context())
		if err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		return writeAdminJSON(w, http.StatusOK, list)
	}
	scopeName, id, ok := strings.Cut(rest, "/")
	scope, serr := billing.ParseScope(scopeName)
	if !ok || id == "" || serr != nil {
		return apiErr(http.StatusNotFound, fmt.Errorf("use /air/budgets/user/<user>, /air/budgets/key/<key id> or /air/budgets/team/<team>"))
	}
	switch r.Method {
	case http.MethodGet:
		return writeAdminJSON(w, http.StatusOK, st.Budgets.Status(scope, id))
	case http.MethodPut, http.MethodPost:
		var lim billing.Limits
		if err := decodeAdminBody(w, r, &lim, true, "limits"); err != nil {
			return err
		}
		if err := setLimits(r, st, scope, id, lim); err != nil {
			return err
		}
		return writeAdminJSON(w, http.StatusOK, st.Budgets.Status(scope, id))
	case http.MethodDelete:
		if err := st.DeleteLimits(r.Context(), scope, id); err != nil {
			return apiErr(http.StatusInternalServerError, err)
		}
		return writeAdminJSON(w, http.StatusOK, st.Budgets.Status(scope, id))
	default:
		return apiErr(http.StatusMethodNotAllowed, fmt.Errorf("method %s not allowed", r.Method))
	}
}

// setLimits checks and sets the limits of id in scope, for the admin API,
// and records the change in the audit trail.
func setLimits(r *http.Request, st *gateway.Shared, scope billing.Scope, id string, lim billing.Limits) error {
	var pt *billing.PriceTable
	if app := running.Load(); app != nil {
		pt = app.cfg.Prices
	}
	if err := checkLimits(r.Context(), st, pt, scope, id, lim); errors.Is(err, errBadLimits) {
		return apiErr(http.StatusBadRequest, err)
	} else if err != nil {
		return apiErr(http.StatusInternalServerError, err)
	}
	if err := st.SetLimits(r.Context(), scope, id, lim); err != nil {
		return apiErr(http.StatusBadRequest, err)
	}
	return nil
}

// addLimitFlags adds the flags that limitsFromFlags reads.
func addLimitFlags(cmd *cobra.Command) {
	cmd.Flags().String("monthly", "", "Spend limit per calendar month (UTC)")
	cmd.Flags().String("total", "", "Spend limit over all time")
	cmd.Flags().String("currency", "", "Currency of the limits (default: the price file's)")
	cmd.Flags().Int64("rpm", 0, "Requests per minute")
	cmd.Flags().Int64("tpm", 0, "Tokens per minute")
	cmd.Flags().Int64("max-parallel", 0, "Requests in flight at once (per instance)")
}

// limitsFromFlags reads the limits of a command's flags (addLimitFlags).
func limitsFromFlags(cmd *cobra.Command) (billing.Limits, error) {
	var lim billing.Limits
	var err error
	lim.Currency, _ = cmd.Flags().GetString("currency")
	for flag, dst := range map[string]*billing.Amount{"monthly": &lim.Monthly, "total": &lim.Total} {
		if v, _ := cmd.Flags().GetString(flag); v != "" {
			if *dst, err = billing.ParseAmount(v); err != nil {
				return lim, fmt.Errorf("--%s: %v", flag, err)
			}
		}
	}
	lim.RPM, _ = cmd.Flags().GetInt64("rpm")
	lim.TPM, _ = cmd.Flags().GetInt64("tpm")
	lim.MaxParallel, _ = cmd.Flags().GetInt64("max-parallel")
	return lim, nil
}

// printStatus prints a budget's status as a table, or as JSON with --json.
func printStatus(cmd *cobra.Command, st billing.BudgetStatus) error {
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return printJSON(cmd.OutOrStdout(), st)
	}
	return printBudgetStatus(cmd.OutOrStdout(), st)
}

func usageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage [--by day|model|key|user|team|tag|day-key] [--user <u>] [--key <id>] [--model <m>] [--team <t>] [--tag <tag>] [--since <date>] [--until <date>] [--json]",
		Short: "Shows requests, tokens and cost by day and model, or by one of day, model, key, user, team or tag, or by day and key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for _, f := range []string{"by", "user", "key", "model", "team", "tag", "since", "until"} {
				if v, _ := cmd.Flags().GetString(f); v != "" {
					q.Set(f, v)
				}
			}
			var rep billing.Report
			if err := adminCall(cmd, http.MethodGet, "/air/usage?"+q.Encode(), nil, &rep); err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
			// CACHE WRITE counts every cache write, 1H the part written for an
			// hour; OUTPUT counts every output token, REASONING the part spent
			// reasoning.
			by, _ := cmd.Flags().GetString("by")
			printReport(tw, billing.GroupBy(by), &rep)
			return tw.Flush()
		},
	}
	cmd.Flags().String("by", "", "Group by day, model, key, user, team, tag or day-key (default: day and model)")
	cmd.Flags().String("team", "", "Only the requests of this team's members")
	cmd.Flags().String("tag", "", "Only the requests with this tag")
	cmd.Flags().String("user", "", "Only this user")
	cmd.Flags().String("key", "", "Only this key id")
	cmd.Flags().String("model", "", "Only this model")
	cmd.Flags().String("since", "", "First day (YYYY-MM-DD), inclusive")
	cmd.Flags().String("until", "", "Last day (YYYY-MM-DD), inclusive")
	cmd.Flags().Bool("json", false, "Print JSON")
	return cmd
}

func budgetCommand() *cobra.Command {
	budget := &cobra.Command{Use: "budget", Short: "Sets, shows and lifts spend and rate limits of a user or key"}
	target := func(cmd *cobra.Command) (string, error) {
		user, _ := cmd.Flags().GetString("user")
		key, _ := cmd.Flags().GetString("key")
		if (user == "") == (key == "") {
			return "", fmt.Errorf("give exactly one of --user or --key")
		}
		if user != "" {
			return "/air/budgets/user/" + url.PathEscape(user), nil
		}
		return "/air/budgets/key/" + url.PathEscape(key), nil
	}
	addTarget := func(cmd *cobra.Command) {
		cmd.Flags().String("user", "", "The user")
		cmd.Flags().String("key", "", "The key id")
	}
	show := func(method string) func(cmd *cobra.Command, _ []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			path, err := target(cmd)
			if err != nil {
				return err
			}
			var out billing.BudgetStatus
			if err := adminCall(cmd, method, path, nil, &out); err != nil {
				return err
			}
			return printStatus(cmd, out)
		}
	}
	set := &cobra.Command{
		Use:   "set --user <u> | --key <id> [--monthly <amount>] [--total <amount>] [--currency <c>] [--rpm <n>] [--tpm <n>] [--max-parallel <n>]",
		Short: "Sets limits (replacing earlier ones); amounts are decimals such as 12.50",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, err := target(cmd)
			if err != nil {
				return err
			}
			lim, err := limitsFromFlags(cmd)
			if err != nil {
				return err
			}
			body, _ := json.Marshal(lim)
			var out billing.BudgetStatus
			if err := adminCall(cmd, http.MethodPut, path, body, &out); err != nil {
				return err
			}
			return printStatus(cmd, out)
		},
	}
	addTarget(set)
	addLimitFlags(set)
	get := &cobra.Command{Use: "get --user <u> | --key <id>", Short: "Shows limits and spend", Args: cobra.NoArgs, RunE: show(http.MethodGet)}
	del := &cobra.Command{Use: "delete --user <u> | --key <id>", Short: "Lifts the limits", Args: cobra.NoArgs, RunE: show(http.MethodDelete)}
	addTarget(get)
	addTarget(del)
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "Lists every user and key with limits, with their spend",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/budgets/", func(w io.Writer, out *[]billing.BudgetEntry) error {
				printBudgets(w, *out)
				return nil
			})
		},
	}
	list.Flags().Bool("json", false, "Print JSON")
	for _, c := range []*cobra.Command{set, get, del} {
		c.Flags().Bool("json", false, "Print JSON")
	}
	budget.AddCommand(set, get, del, list)
	return groupCommand(budget)
}
