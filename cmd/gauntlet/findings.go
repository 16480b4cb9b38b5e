package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/findings"
)

func newFindingsCmd(g *globals) *cobra.Command {
	var (
		repo, stateDir string
		write, scripts bool
	)
	cmd := &cobra.Command{
		Use:   "findings [BUNDLE...]",
		Short: "Replay the finding bundles (findings/<operator>/<slug>) and say which still reproduce",
		Long: `findings replays each finding bundle's reproducer (gauntlet/reproducer.json) on the
embedded cluster, one at a time, the bundles of one target on one cluster with its
operator deployed once, and prints per bundle: reproduces, no longer reproduces, or
could not run (with why); with --scripts, each bundle's reproduce.sh (kubectl only)
runs against the same cluster after the replay and its verdict is printed too. Without arguments it replays every bundle under the
repository's findings folder. It exits non-zero when a bundle could not run or is
malformed; a bundle that no longer reproduces is reported, not an error (an upstream
fix shows up that way).

--write regenerates each named bundle's gauntlet/reproducer.json from its finding.yaml
and manifests instead of replaying.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if repo == "" {
				repo = findRepo()
			}
			if repo == "" {
				return errors.New("the Gauntlet repository was not found above the working directory: pass --repo")
			}
			if write {
				if len(args) == 0 {
					return errors.New("--write needs the bundle folders to write")
				}
				for _, dir := range args {
					if err := findings.WriteReproducer(dir); err != nil {
						return err
					}
					fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", filepath.Join(dir, findings.ReproduceDir, "reproducer.json"))
				}
				return nil
			}
			var bundles []*findings.Bundle
			if len(args) == 0 {
				bs, err := findings.Discover(filepath.Join(repo, "findings"))
				if err != nil {
					return err
				}
				bundles = bs
			}
			for _, dir := range args {
				b, err := findings.Load(filepath.Clean(dir))
				if err != nil {
					return err
				}
				bundles = append(bundles, b)
			}
			start := time.Now()
			fmt.Fprintf(cmd.OutOrStdout(), "findings: replaying %d bundles on the embedded cluster, one at a time\n", len(bundles))
			res := findings.Replay(cmd.Context(), bundles, findings.Options{Repo: repo, StateRoot: stateDir, Log: g.logger(), Progress: cmd.OutOrStdout(), Scripts: scripts})
			counts, scriptCounts := map[findings.Status]int{}, map[findings.Status]int{}
			for _, r := range res {
				counts[r.Status]++
				if r.Script != nil {
					scriptCounts[r.Script.Status]++
				}
			}
			line := func(c map[findings.Status]int) string {
				return fmt.Sprintf("%d reproduce, %d no longer reproduce, %d could not run",
					c[findings.Reproduces], c[findings.NoLongerReproduces], c[findings.CouldNotRun])
			}
			sum := "findings: " + line(counts)
			if scripts {
				sum += "; reproduce.sh: " + line(scriptCounts)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s)\n", sum, time.Since(start).Round(time.Second))
			if n := counts[findings.CouldNotRun] + scriptCounts[findings.CouldNotRun]; n > 0 {
				return fmt.Errorf("%d replays or scripts could not run", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "Gauntlet repository (default: found above the working directory)")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "embedded clusters' state root (default $GAUNTLET_STATE_DIR or /var/lib/gauntlet)")
	cmd.Flags().BoolVar(&scripts, "scripts", false, "also run each bundle's reproduce.sh (kubectl only) against the same cluster after its replay")
	cmd.Flags().BoolVar(&write, "write", false, "regenerate the named bundles' gauntlet/reproducer.json instead of replaying")
	return cmd
}
