// Package cluster is what the campaign needs of a cluster back end: create a
// cluster, talk to it, delete it. cluster/local (embedded, the default) and
// cluster/kind (where Docker runs) implement it; optional capabilities such as
// native faults are discovered by type assertion.
package cluster

import (
	"context"

	"k8s.io/client-go/rest"
)

// Cluster is a running cluster.
type Cluster interface {
	// Name is the cluster's name.
	Name() string
	// RESTConfig is a cluster-admin client configuration (a fresh copy).
	RESTConfig() *rest.Config
	// Kubeconfig is the path of a cluster-admin kubeconfig file.
	Kubeconfig() string
	// Delete removes the cluster and everything it left on the host.
	Delete(ctx context.Context) error
}

// Provider creates clusters of one back end.
type Provider interface {
	// Create brings up a cluster called name and returns once it can run pods.
	Create(ctx context.Context, name string) (Cluster, error)
}
