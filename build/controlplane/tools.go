//go:build tools

// Package controlplane pins the upstream Kubernetes control plane and etcd that the
// embedded cluster runs. It is a separate module so the main module stays light.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
