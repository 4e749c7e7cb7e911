package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/billing"
)

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
		return admin.PrintJSON(cmd.OutOrStdout(), st)
	}
	return admin.PrintBudgetStatus(cmd.OutOrStdout(), st)
}

func usageCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "usage [--by day|model|key|user|team|tag|day-key] [--user <u>] [--key <id>] [--model <m>] [--team <t>] [--tag <tag>] [--since <date>] [--until <date>] [--json]",
		Short: "Shows requests, tokens and cost by day and model, or by one of day, model, key, user, team or tag, or by day and key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := flagQuery(cmd, "by", "user", "key", "model", "team", "tag", "since", "until")
			var rep billing.Report
			if err := adminCall(cmd, http.MethodGet, "/air/usage?"+q.Encode(), nil, &rep); err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return admin.PrintJSON(cmd.OutOrStdout(), rep)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', tabwriter.AlignRight)
			// CACHE WRITE counts every cache write, 1H the part written for an
			// hour; OUTPUT counts every output token, REASONING the part spent
			// reasoning.
			by, _ := cmd.Flags().GetString("by")
			admin.PrintReport(tw, billing.GroupBy(by), &rep)
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
				admin.PrintBudgets(w, *out)
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
