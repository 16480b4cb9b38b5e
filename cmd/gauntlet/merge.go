package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/reports"
)

func newMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Join the results folders of a sharded campaign's shards into one",
		Long: `merge joins the results folders written by gauntlet run --shard K/N (one per
shard, of one target and seed) into one results folder: summary.json, junit.xml
and report.html as one campaign, alarm groups merged by signature, and each
shard's steps/ and alarms/ under DIR/shards/K. It refuses folders of another
target, seed or shard count, and two folders of one shard.

It exits non-zero when the merged results hold alarm groups or a shard is
missing; the folder is written either way.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, dirs []string) error {
			if out == "" {
				return errors.New("merge: pass --out DIR, the merged results folder to create")
			}
			s, err := reports.Merge(cmd.Context(), out, dirs, reports.MergeOptions{Details: campaign.ReportDetails})
			if err != nil {
				return err
			}
			m := s.Merged
			fmt.Fprintf(cmd.ErrOrStderr(), "gauntlet: merged shards %s of %d: %d transitions judged (%d desired-state steps planned), %d alarm groups, %d misoperation groups; results in %s\n",
				joinInts(m.Present), m.Count, s.StepsDone, s.StepsPlanned, len(s.Alarms), len(s.Misoperations), out)
			var problems []string
			if !m.Complete() {
				problems = append(problems, fmt.Sprintf("missing shards %s of %d: their test cases did not run (merge them when they have run)", joinInts(m.Missing), m.Count))
			}
			if s.Partial {
				problems = append(problems, "the merged campaign is partial: resume the stopped shards with gauntlet run --resume and merge again")
			}
			if len(s.Alarms) > 0 {
				problems = append(problems, fmt.Sprintf("%d alarm groups: see %s", len(s.Alarms), out))
			}
			if !m.Complete() || len(s.Alarms) > 0 {
				return errors.New(strings.Join(problems, "; "))
			}
			if len(problems) > 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "gauntlet:", strings.Join(problems, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "merged results folder to create (must not exist, or be empty)")
	return cmd
}

func joinInts(ks []int) string {
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprint(k)
	}
	return strings.Join(parts, ",")
}
