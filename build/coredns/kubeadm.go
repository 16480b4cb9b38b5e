//go:build kubeadm

package main

// The plugins of the Corefile kubeadm writes (its CoreDNS addon) that the embedded cluster's
// DNS does without: metrics (the "prometheus" directive), forward, loop and reload. Built with
// `-tags kubeadm` for the kind node image (make kind-coredns), whose CoreDNS runs kubeadm's
// Corefile unchanged.
import (
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/reload"
)
