package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/internal/buildinfo"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of gauntlet and of the Kubernetes it embeds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "gauntlet %s (%s, %s/%s)\n", buildinfo.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			fmt.Fprintf(out, "embedded Kubernetes %s (control plane cache: %s)\n", backends.KubernetesVersion, backends.ControlPlaneBinDir())
			return nil
		},
	}
}
