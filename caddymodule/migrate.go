package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"github.com/caddy-air/caddy-air/store/postgres"
)

// migrateCommand is `caddy air migrate`: unlike the other subcommands it
// talks to the database itself, since it must run before any gateway does
// (a gateway also migrates at start).
func migrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate [--dsn <dsn>] [--config <file> [--adapter <name>]] [--status]",
		Short: "Applies the PostgreSQL schema migrations",
		Long: `
Applies the schema migrations of the postgres storage backend that the
database lacks, under an advisory lock (several instances may run it at
once; each migration is applied once). The database is the one of --dsn,
or of the air app's "storage postgres" line in --config. Placeholders such
as {env.AIR_PG_DSN} are expanded, so the DSN need not appear on the command
line. With --status it only prints the schema's version.
`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dsnFlag, _ := cmd.Flags().GetString("dsn")
			configFile, _ := cmd.Flags().GetString("config")
			adapter, _ := cmd.Flags().GetString("adapter")
			dsn, err := migrationDSN(dsnFlag, configFile, adapter)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Minute)
			defer cancel()
			pool, err := postgres.Connect(ctx, dsn)
			if err != nil {
				return err
			}
			defer pool.Close()
			w := cmd.OutOrStdout()
			if status, _ := cmd.Flags().GetBool("status"); !status {
				applied, err := postgres.Migrate(ctx, pool)
				if err != nil {
					return err
				}
				for _, m := range applied {
					fmt.Fprintf(w, "applied %s\n", m.Name)
				}
			}
			current, latest, err := postgres.SchemaVersion(ctx, pool)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "schema version %d (this build's latest: %d)\n", current, latest)
			return nil
		},
	}
	cmd.Flags().String("dsn", "", "PostgreSQL connection string (placeholders such as {env.AIR_PG_DSN} work)")
	cmd.Flags().Bool("status", false, "Only print the schema version")
	return cmd
}

// migrationDSN finds the DSN to migrate: the flag's, or the storage line's
// of the config file, with placeholders expanded.
func migrationDSN(flag, configFile, adapter string) (string, error) {
	raw := flag
	if raw == "" {
		if configFile == "" {
			return "", errors.New("give the database with --dsn, or a config with a storage postgres line with --config")
		}
		cfg, _, _, err := caddycmd.LoadConfig(configFile, adapter)
		if err != nil {
			return "", err
		}
		var parsed struct {
			Apps struct {
				Air struct {
					Storage *struct {
						Backend string `json:"backend"`
						DSN     string `json:"dsn"`
					} `json:"storage"`
				} `json:"air"`
			} `json:"apps"`
		}
		if err := json.Unmarshal(cfg, &parsed); err != nil {
			return "", fmt.Errorf("reading %s: %v", configFile, err)
		}
		st := parsed.Apps.Air.Storage
		if st == nil || st.Backend != "postgres" {
			return "", fmt.Errorf("%s has no storage postgres line in its air options", configFile)
		}
		raw = st.DSN
	}
	dsn, err := expand(caddy.NewReplacer(), raw)
	if err != nil {
		return "", fmt.Errorf("dsn: %w", err)
	}
	return dsn, nil
}
