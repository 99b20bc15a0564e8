package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/trueup-dev/trueup/internal/daemon"
	"github.com/trueup-dev/trueup/internal/plural"
)

func newMigrateCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply database migrations and exit (serve also does this at start)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(configPath)
			if err != nil {
				return err
			}
			logger := daemon.NewLogger(cfg, daemon.Redactor(cfg, nil).Writer(cmd.ErrOrStderr()))
			db, err := daemon.OpenDatabase(cmd.Context(), cfg, logger)
			if err != nil {
				return cfg.ScrubError(err) // may quote TRUEUP_DATABASE_URL
			}
			defer db.Close()
			applied, repairs, err := db.Migrate(cmd.Context())
			if err != nil {
				return cfg.ScrubError(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "applied %s %v\n", plural.Count(len(applied), "migration", "migrations"), applied)
			for _, m := range repairs.Messages() {
				fmt.Fprintln(cmd.OutOrStdout(), m)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "trueup.yaml", "controller config file")
	return cmd
}
