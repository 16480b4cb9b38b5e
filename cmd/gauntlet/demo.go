package main

import (
	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/internal/demo"
)

func newDemoCmd(g *globals) *cobra.Command {
	f := &clusterFlags{}
	var keep bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Bring up an embedded cluster, run a StatefulSet of Valkey pods, show them serving, tear down",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := f.options(g)
			if opts.Name == "gauntlet" {
				opts.Name = "gauntlet-demo"
			}
			return demo.Run(cmd.Context(), demo.Options{Cluster: opts, Keep: keep}, cmd.OutOrStdout())
		},
	}
	addCreateFlags(cmd, f)
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "state root")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the cluster running")
	return cmd
}
