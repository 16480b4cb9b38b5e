package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
)

func newKindCmd() *cobra.Command {
	kind := &cobra.Command{Use: "kind", Short: "The kind back end's offline pieces"}
	var o nodeimage.Options
	nodeImage := &cobra.Command{
		Use:   "node-image",
		Short: "Build an offline kind node image (Debian bookworm, the pinned Kubernetes, every image kubeadm needs preloaded)",
		Long: "Build a kind node image from Debian's packages (debootstrap) and the locally built Kubernetes binaries\n" +
			"(make kind-binaries controlplane kind-coredns), with the images kubeadm asks for assembled offline and preloaded.\n" +
			"Cached: rebuilt only when its inputs change (label " + nodeimage.InputsLabel + "). Needs root and a Docker engine.\n" +
			"Create clusters from it with networking.disableDefaultCNI and the kubeadm patches of nodeimage.ClusterConfig.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Progress = cmd.ErrOrStderr()
			res, err := nodeimage.Build(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Image)
			return nil
		},
	}
	f := nodeImage.Flags()
	f.StringVar(&o.Image, "image", nodeimage.DefaultImage, "the image's name")
	f.StringVar(&o.NodeBinDir, "node-binaries", "", "folder of kubelet, kubeadm, kubectl, kube-proxy (default: make kind-binaries' cache)")
	f.StringVar(&o.ControlPlaneBinDir, "controlplane-binaries", "", "folder of etcd and the control plane (default: $GAUNTLET_CONTROLPLANE_BIN, else make controlplane's cache)")
	f.StringVar(&o.CoreDNSDir, "coredns", "", "folder of a coredns binary with kubeadm's Corefile plugins (default: make kind-coredns' cache)")
	f.StringVar(&o.PauseBinary, "pause-binary", "", "static pause binary (default: built from cluster/kind/nodeimage/pause)")
	f.StringVar(&o.Mirror, "mirror", "", "Debian mirror for debootstrap (default http://deb.debian.org/debian)")
	f.BoolVar(&o.Force, "force", false, "rebuild even if an image with the same inputs exists")
	kind.AddCommand(nodeImage)
	return kind
}
