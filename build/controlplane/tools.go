//go:build tools

// Package controlplane pins the upstream Kubernetes control plane and etcd that the
// embedded cluster runs, and the node binaries (kubelet, kubeadm, kube-proxy, kubectl)
// of the same release that the kind lane's node image needs (build.sh --node). It is a
// separate module so the main module stays light.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"

	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
