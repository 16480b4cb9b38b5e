package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/campaign"
)

func newReproduceCmd(g *globals) *cobra.Command {
	var rf runFlags
	cmd := &cobra.Command{
		Use:   "reproduce DIR/alarms/N",
		Short: "Replay an alarm's minimized reproducer on a fresh cluster",
		Long: `reproduce declares the reproducer's seed and steps on a fresh embedded cluster
with the target's operator and judges every transition. It exits non-zero while
the alarm's signature still fires, and zero once it no longer does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := campaign.ReadReproducer(args[0])
			if err != nil {
				return err
			}
			for _, st := range rep.Steps {
				rf.faults = rf.faults || st.Fault != nil || len(st.Faults) > 0
			}
			t, p, err := rf.resolve(g, rep.Target)
			if err != nil {
				return err
			}
			cfg := campaign.Config{Target: t, Provider: p, Logger: g.logger(), Quiet: g.quiet}
			res, err := campaign.Reproduce(cmd.Context(), cfg, rep)
			if err != nil {
				return err
			}
			if res.Reproduced {
				return fmt.Errorf("reproduced: %s (%s) fired again: %s", rep.Signature, rep.Oracle, rep.Summary)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "not reproduced: %s did not fire (%d other findings)\n", rep.Signature, len(res.Findings))
			return nil
		},
	}
	rf.add(cmd)
	return cmd
}
