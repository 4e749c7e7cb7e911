package caddymodule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
	"github.com/caddy-air/caddy-air/billing"
	"github.com/caddy-air/caddy-air/keys"
	"github.com/caddy-air/caddy-air/tags"
)

func init() {
	caddycmd.RegisterCommand(caddycmd.Command{
		Name:  "air",
		Usage: "keys|usage|users|ledger|budget|team|providers|prices|migrate|audit …",
		Short: "Manages caddy-air keys, usage reports and budgets, and shows upstream state",
		Long: `
Manages caddy-air through the admin API of a running Caddy (these never
open the database themselves). The admin address is taken from --address, or from the
config given with --config (and --adapter), or is the default localhost:2019.

  caddy air keys create --user <user> [--name <name>] [--expires <duration>] [--models <ids,globs>] [--tags <tags>] [--limit <amount>] [--allow-ips <cidrs>]
  caddy air keys list [--user <user>] [--json]
  caddy air keys revoke <key id>
  caddy air keys regenerate <key id> [--grace <duration>]
  caddy air keys log-requests <key id> on|off
  caddy air request-log <record id>
  caddy air usage [--by day|model|key|user|team|tag|day-key] [--user <u>] [--key <id>] [--model <m>] [--team <t>] [--tag <tag>] [--since <date>] [--until <date>] [--json]
  caddy air users [--month <YYYY-MM>] [--json]
  caddy air ledger [--user <u>] [--key <id>] [--model <m>] [--outcome <o>] [--since <date>] [--until <date>] [--limit <n>] [--after <cursor>] [--newest-first] [--csv|--json]
  caddy air budget set --user <u> | --key <id> [--monthly <amount>] [--total <amount>] [--currency <c>] [--rpm <n>] [--tpm <n>] [--max-parallel <n>]
  caddy air budget get|delete --user <u> | --key <id>
  caddy air budget list [--json]
  caddy air team create <team> [--models <ids,globs>]
  caddy air team add <team> <user> [--admin]
  caddy air team remove <team> <user>
  caddy air team limits <team> [--monthly <amount>] [--total <amount>] [--models <ids,globs>] …
  caddy air team list [--json]
  caddy air team log-requests <team> on|off
  caddy air providers [--json]
  caddy air prices [--json]
  caddy air migrate [--dsn <dsn>] [--config <file>] [--status]
  caddy air audit [--since <when>] [--until <when>] [--actor <a>] [--action <a>] [--target <id>] [--limit <n>] [--before <cursor>] [--csv|--jsonl|--json]

"migrate" is the exception: it connects to the PostgreSQL database itself.
`,
		CobraFunc: airCommand,
	})
}

// airCommand sets up cmd as `caddy air`: its flags and subcommands.
func airCommand(cmd *cobra.Command) {
	cmd.PersistentFlags().String("address", "", "The address of the admin API")
	cmd.PersistentFlags().StringP("config", "c", "", "Configuration file, to find the admin address")
	cmd.PersistentFlags().StringP("adapter", "a", "", "Name of the config adapter to apply")
	cmd.AddCommand(keyCommand(), usageCommand(), usersCommand(), ledgerCommand(), budgetCommand(), teamCommand(), providersCommand(), pricesCommand(), migrateCommand(), auditCommand(), requestLogCommand())
	groupCommand(cmd)
}

func keyCommand() *cobra.Command {
	key := &cobra.Command{Use: "keys", Aliases: []string{"key"}, Short: "Creates, lists and revokes API keys"}

	create := &cobra.Command{
		Use:   "create --user <user> [--name <name>] [--expires <duration>] [--models <ids,globs>] [--tags <tags>] [--limit <amount>] [--allow-ips <cidrs>]",
		Short: "Creates a key and prints it once, on the last line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			user, _ := cmd.Flags().GetString("user")
			name, _ := cmd.Flags().GetString("name")
			expires, _ := cmd.Flags().GetString("expires")
			models, _ := cmd.Flags().GetStringSlice("models")
			limit, _ := cmd.Flags().GetString("limit")
			tagList, _ := cmd.Flags().GetString("tags")
			defTags, err := tags.Parse(tagList)
			if err != nil {
				return fmt.Errorf("--tags: %v", err)
			}
			allow, _ := cmd.Flags().GetStringSlice("allow-ips")
			body, _ := json.Marshal(admin.CreateKeyRequest{CreateOptions: keys.CreateOptions{User: user, Name: name, Models: models, Tags: defTags, Limit: limit,
				AllowIPs: allow}, ExpiresIn: expires})
			var out admin.CreateKeyResponse
			if err := adminCall(cmd, http.MethodPost, "/air/keys", body, &out); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "id:      %s\nuser:    %s\n", out.ID, out.User)
			if out.ExpiresAt != nil {
				fmt.Fprintf(w, "expires: %s\n", out.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"))
			}
			if len(out.Models) > 0 {
				fmt.Fprintf(w, "models:  %s\n", strings.Join(out.Models, ","))
			}
			if len(out.Tags) > 0 {
				fmt.Fprintf(w, "tags:    %s\n", strings.Join(out.Tags, ","))
			}
			if limit != "" {
				fmt.Fprintf(w, "limit:   %s (all time)\n", limit)
			}
			fmt.Fprintln(w, "Store this key now: it is not shown again.")
			fmt.Fprintln(w, out.Secret)
			return nil
		},
	}
	create.Flags().String("user", "", "The user who owns the key (required)")
	create.Flags().String("name", "", "A label for the key")
	create.Flags().String("expires", "", "Lifetime of the key, e.g. 720h or 30d (default: no expiry)")
	create.Flags().StringSlice("models", nil, "Models the key may use: ids or globs, comma-separated, e.g. 'gpt-4o,claude-*' (default: all)")
	create.Flags().String("tags", "", "Default tags of the key's requests, comma-separated, e.g. 'search,env:prod' (a request's x-air-tags header replaces them)")
	create.Flags().String("limit", "", "All-time spend limit of the key, e.g. 5.00, in the price file's currency (default: none)")
	create.Flags().StringSlice("allow-ips", nil, "Client networks the key may be used from: CIDRs or addresses, comma-separated (default: any)")
	_ = create.MarkFlagRequired("user")

	list := &cobra.Command{
		Use:   "list [--user <user>] [--json]",
		Short: "Lists keys (never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			user, _ := cmd.Flags().GetString("user")
			var out []keys.Key
			if err := adminCall(cmd, http.MethodGet, "/air/keys?user="+url.QueryEscape(user), nil, &out); err != nil {
				return err
			}
			if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
				return admin.PrintJSON(cmd.OutOrStdout(), out)
			}
			// A key's spend limit is its budget: join the budgets in.
			var budgets []billing.BudgetEntry
			if err := adminCall(cmd, http.MethodGet, "/air/budgets/", nil, &budgets); err != nil {
				return err
			}
			limits := map[string]billing.Limits{}
			for _, b := range budgets {
				if b.Scope == billing.ScopeKey && b.Limits != nil {
					limits[b.ID] = *b.Limits
				}
			}
			return admin.PrintKeys(cmd.OutOrStdout(), out, limits)
		},
	}
	list.Flags().String("user", "", "Only this user's keys")
	list.Flags().Bool("json", false, "Print JSON")

	revoke := &cobra.Command{
		Use:   "revoke <key id>",
		Short: "Revokes a key; it stops working on the next request",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var out keys.Key
			if err := adminCall(cmd, http.MethodDelete, "/air/keys/"+url.PathEscape(args[0]), nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %s (user %s)\n", out.ID, out.User)
			return nil
		},
	}
	key.AddCommand(create, list, revoke, regenerateCommand(),
		logRequestsCommand("key", func(id string) string { return "/air/keys/" + url.PathEscape(id) }))
	return groupCommand(key)
}

// groupCommand makes cmd, a command that only groups subcommands, fail
// with a non-zero exit on a subcommand it does not have (`caddy air kyes
// list`), where cobra would print the help and exit 0, so that a typo in a
// script is not taken for success. Without arguments it prints its help.
func groupCommand(cmd *cobra.Command) *cobra.Command {
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return errors.New(msg)
	}
	return cmd
}

// adminCall sends one request to the admin API and decodes the answer into
// out. Non-2xx answers become errors carrying the API's message.
func adminCall(cmd *cobra.Command, method, uri string, body []byte, out any) error {
	data, err := adminRaw(cmd, method, uri, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(data, out)
}

// flagQuery is the admin API query of cmd's string flags named in names
// that are set.
func flagQuery(cmd *cobra.Command, names ...string) url.Values {
	q := url.Values{}
	for _, f := range names {
		if v, _ := cmd.Flags().GetString(f); v != "" {
			q.Set(f, v)
		}
	}
	return q
}

// adminRaw sends one request to the admin API and returns the answer's
// body. Non-2xx answers become errors carrying the API's message.
func adminRaw(cmd *cobra.Command, method, uri string, body []byte) ([]byte, error) {
	addrFlag, _ := cmd.Flags().GetString("address")
	configFile, _ := cmd.Flags().GetString("config")
	adapter, _ := cmd.Flags().GetString("adapter")
	addr, err := caddycmd.DetermineAdminAPIAddress(addrFlag, nil, configFile, adapter)
	if err != nil {
		return nil, fmt.Errorf("finding the admin address: %v", err)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	resp, err := caddycmd.AdminAPIRequest(addr, method, uri, admin.CLIHeaders(), rd)
	if err != nil {
		return nil, adminError(addr, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 {
		return nil, answerError(resp.Status, data)
	}
	return data, nil
}

// adminError explains an error of caddycmd.AdminAPIRequest, which reports
// every failure as text: only a failure to reach addr suggests that Caddy
// is not running; an answer of 400 or more carries the API's message.
func adminError(addr string, err error) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "caddy responded with error: HTTP "); ok {
		status, body, _ := strings.Cut(rest, ": ")
		return answerError(status, []byte(body))
	}
	if strings.HasPrefix(msg, "performing request: ") {
		return fmt.Errorf("is caddy running? could not reach its admin API at %s: %s", addr, strings.TrimPrefix(msg, "performing request: "))
	}
	return err
}

// answerError turns an error answer of the admin API into an error with
// the API's message, or with the status and body when it has none.
func answerError(status string, body []byte) error {
	var apiError struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &apiError) == nil && apiError.Error != "" {
		return errors.New(apiError.Error)
	}
	return fmt.Errorf("admin API answered %s: %s", status, strings.TrimSpace(string(body)))
}

// getAndPrint reads uri from the admin API into a T and prints it to
// cmd's output: as JSON with --json, else with table.
func getAndPrint[T any](cmd *cobra.Command, uri string, table func(io.Writer, *T) error) error {
	var out T
	if err := adminCall(cmd, http.MethodGet, uri, nil, &out); err != nil {
		return err
	}
	if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
		return admin.PrintJSON(cmd.OutOrStdout(), out)
	}
	return table(cmd.OutOrStdout(), &out)
}
