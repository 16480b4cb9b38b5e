package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/cmd/gauntlet/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	f := &clusterFlags{}
	var (
		keep, noCampaign bool
		repo, out        string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The main job in a few minutes: an embedded cluster serving Valkey, then a campaign that catches a seeded operator bug and passes the clean operator",
		Long: `demo brings up an embedded cluster and shows a StatefulSet of Valkey pods serving, then
runs a short campaign against the bundled operator built with a seeded bug (a config
default that overrules the user's value): the alarm, its minimized reproducer, the
generated Go test and report.html are printed; then the same campaign against the
clean operator must raise no alarm. It needs the Gauntlet repository (the seeded
bugs and the operator source) and the go command.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name := f.name
			if name == "gauntlet" {
				name = "gauntlet-demo"
			}
			if err := demo.Run(cmd.Context(), demo.Options{Name: name, Cluster: f.options(g), Keep: keep}, cmd.OutOrStdout()); err != nil || noCampaign {
				return err
			}
			if repo == "" {
				repo = findRepo()
			}
			if repo == "" {
				return errors.New("demo: the campaign part needs the Gauntlet repository: pass --repo (or --no-campaign)")
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return err
			}
			if err := os.RemoveAll(abs); err != nil {
				return fmt.Errorf("demo: clear %s: %w", abs, err)
			}
			return demo.RunCampaign(cmd.Context(), demo.CampaignOptions{RepoRoot: repo, WorkDir: abs}, cmd.OutOrStdout())
		},
	}
	addCreateFlags(cmd, f)
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "state root")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the cluster running")
	cmd.Flags().BoolVar(&noCampaign, "no-campaign", false, "show only the cluster part")
	cmd.Flags().StringVar(&repo, "repo", "", "Gauntlet repository (default: found above the working directory or the binary)")
	cmd.Flags().StringVar(&out, "out", "gauntlet-demo-results", "folder for the campaigns' operator binaries, cluster state and results (cleared first)")
	return cmd
}
