package caddymodule

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/admin"
)

// teamCommand is caddy air team: create, add, remove, limits and list,
// over the admin API's /air/teams.
func teamCommand() *cobra.Command {
	team := &cobra.Command{Use: "team", Aliases: []string{"teams"}, Short: "Creates teams, manages their members, models and limits"}
	teamPath := func(name string, rest ...string) string {
		p := "/air/teams/" + url.PathEscape(name)
		for _, r := range rest {
			p += "/" + url.PathEscape(r)
		}
		return p
	}
	// call sends a request about one team and prints the team it answers.
	call := func(cmd *cobra.Command, method, path string, body []byte) error {
		var out admin.TeamView
		if err := adminCall(cmd, method, path, body, &out); err != nil {
			return err
		}
		if asJSON, _ := cmd.Flags().GetBool("json"); asJSON {
			return admin.PrintJSON(cmd.OutOrStdout(), out)
		}
		return admin.PrintTeam(cmd.OutOrStdout(), &out)
	}
	create := &cobra.Command{
		Use:   "create <team> [--models <ids,globs>]",
		Short: "Creates a team with no members",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			models, _ := cmd.Flags().GetStringSlice("models")
			body, _ := json.Marshal(admin.CreateTeamRequest{Name: args[0], Models: models})
			return call(cmd, http.MethodPost, "/air/teams", body)
		},
	}
	create.Flags().StringSlice("models", nil, "Models the team's members may use: ids or globs, comma-separated (default: all)")
	add := &cobra.Command{
		Use:   "add <team> <user> [--admin]",
		Short: "Adds a user to a team (a user is in one team at most), or changes whether a member is its admin",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			admin, _ := cmd.Flags().GetBool("admin")
			body, _ := json.Marshal(map[string]bool{"admin": admin})
			return call(cmd, http.MethodPut, teamPath(args[0], "members", args[1]), body)
		},
	}
	add.Flags().Bool("admin", false, "Make the user an admin of the team (manages its members and keys)")
	remove := &cobra.Command{
		Use:   "remove <team> <user>",
		Short: "Removes a user from a team",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return call(cmd, http.MethodDelete, teamPath(args[0], "members", args[1]), nil)
		},
	}
	limits := &cobra.Command{
		Use:   "limits <team> [--monthly <amount>] [--total <amount>] [--currency <c>] [--rpm <n>] [--tpm <n>] [--max-parallel <n>] [--models <ids,globs>]",
		Short: "Sets a team's limits (replacing earlier ones) and, with --models, the models its members may use",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			lim, err := limitsFromFlags(cmd)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("models") {
				models, _ := cmd.Flags().GetStringSlice("models")
				body, _ := json.Marshal(map[string][]string{"models": models})
				if err := adminCall(cmd, http.MethodPut, teamPath(args[0], "models"), body, nil); err != nil {
					return err
				}
			}
			body, _ := json.Marshal(lim)
			return call(cmd, http.MethodPut, teamPath(args[0], "limits"), body)
		},
	}
	addLimitFlags(limits)
	limits.Flags().StringSlice("models", nil, "Models the team's members may use: ids or globs, comma-separated; '' for all")
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "Lists the teams with their members, limits and spend",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return getAndPrint(cmd, "/air/teams", func(w io.Writer, out *[]admin.TeamView) error {
				for i := range *out {
					if i > 0 {
						fmt.Fprintln(w)
					}
					if err := admin.PrintTeam(w, &(*out)[i]); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	for _, c := range []*cobra.Command{create, add, remove, limits, list} {
		c.Flags().Bool("json", false, "Print JSON")
	}
	team.AddCommand(create, add, remove, limits, list, logRequestsCommand("team", func(n string) string { return teamPath(n) }))
	return groupCommand(team)
}
