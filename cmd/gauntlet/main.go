package main

import (
	_ "github.com/spf13/cobra"
	_ "github.com/valkey-io/valkey-go"
	_ "github.com/virtual-kubelet/virtual-kubelet/node"
	_ "github.com/vishvananda/netlink"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/controller-runtime"
	_ "sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
)

func main() {}
