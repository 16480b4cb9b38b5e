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

// PodRef names a pod.
type PodRef struct{ Namespace, Name string }

func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// HostKernel is the optional capability of a cluster whose nodes run on this machine's
// kernel (kind's nodes are containers): what the kernel lacks (netem, for one) they lack.
type HostKernel interface {
	// SharesHostKernel reports whether the nodes run on this machine's kernel.
	SharesHostKernel() bool
}

// Preloaded is the optional capability of a cluster whose nodes pull no image and hold
// images loaded when the cluster was made (kind on Gauntlet's offline node image): a
// manifest that asks to pull one of them Always must run the loaded one instead.
type Preloaded interface {
	// PreloadedImages are the references of the loaded images.
	PreloadedImages() []string
}

// ProcessFaults is the optional capability of a cluster whose back end injects
// faults itself (the embedded cluster: process signals, API deletions and
// nftables rules in pod network namespaces). Clusters without it need an
// in-cluster chaos tool (Chaos Mesh on kind). Discover it with a type assertion.
type ProcessFaults interface {
	// CrashContainer kills the container's process (it restarts as its pod's
	// restart policy says).
	CrashContainer(ctx context.Context, pod PodRef, container string) error
	// PauseContainer freezes the container's processes; ResumeContainer thaws them.
	PauseContainer(ctx context.Context, pod PodRef, container string) error
	ResumeContainer(ctx context.Context, pod PodRef, container string) error
	// DeletePod deletes the pod with the given grace period (nil: the pod's own).
	DeletePod(ctx context.Context, pod PodRef, grace *int64) error
	// Partition cuts traffic between pods a and b until Heal(name).
	Partition(ctx context.Context, name string, a, b []PodRef) error
	// PartitionFromAPIServer cuts pods off the API server's port until Heal(name).
	PartitionFromAPIServer(ctx context.Context, name string, pods []PodRef) error
	// Heal removes the partition called name.
	Heal(ctx context.Context, name string) error
}
