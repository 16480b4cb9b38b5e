// Package cluster is the one interface of Gauntlet's cluster back ends: create a
// cluster, talk to it, list, delete and collect what abandoned ones left.
// cluster/local (embedded, the default), cluster/kind (where Docker runs) and
// cluster/kubeconfig (a cluster the user already has) implement it, and
// cluster/backends opens one by name; back ends never import each other.
// Optional capabilities (native faults, preloaded images, a detached owner) are
// discovered by type assertion.
package cluster

import (
	"context"
	"errors"

	"k8s.io/client-go/rest"
)

// ErrUnavailable is wrapped by a back end's error when it cannot run on this
// machine at all (no root, no Docker, no kubeconfig); the message says why and the fix.
var ErrUnavailable = errors.New("cluster back end unavailable here")

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

// Provider creates clusters of one back end: what a campaign needs.
type Provider interface {
	// Create brings up a cluster called name and returns once it can run pods.
	Create(ctx context.Context, name string) (Cluster, error)
}

// Backend is one kind of cluster, with everything Gauntlet does to its clusters:
// create them (Provider), list those recorded on this machine, delete one by
// name from any process, and collect those whose owner process is gone.
type Backend interface {
	Provider
	// Name is the back end's name (the --backend value).
	Name() string
	// List returns the clusters of this back end recorded on this machine, by name.
	List(ctx context.Context) ([]Info, error)
	// Delete deletes the cluster called name (ErrNotFound if none is recorded),
	// asking its owner process to stop first when it runs.
	Delete(ctx context.Context, name string) error
	// GC removes every cluster whose owner process is gone and returns their names.
	GC(ctx context.Context) ([]string, error)
}

// ErrNotFound is wrapped by Backend.Delete when no cluster of that name is recorded.
var ErrNotFound = errors.New("no such cluster")

// Info is what a back end records of one of its clusters.
type Info struct {
	// Backend is the back end's name; Name the cluster's.
	Backend string `json:"backend"`
	Name    string `json:"name"`
	// Phase is the back end's word for the cluster's state (Creating, Running, ...).
	Phase string `json:"phase,omitempty"`
	// Running is true while the process that owns the cluster lives.
	Running bool `json:"running"`
	// Server is the API server's address, Kubeconfig a cluster-admin kubeconfig file.
	Server     string `json:"server,omitempty"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// PodCIDR is the cluster's pod network; Nodes its node count (0: unknown).
	PodCIDR string `json:"podCIDR,omitempty"`
	Nodes   int    `json:"nodes,omitempty"`
}

// Owner is the optional capability of a back end whose clusters live in the
// process that created them (the embedded cluster): `gauntlet cluster up` keeps
// one in a detached process.
type Owner interface {
	// Serve creates the cluster called name and keeps it until ctx ends, calling
	// ready once it runs.
	Serve(ctx context.Context, name string, ready func(Cluster)) error
	// WaitRunning waits until the cluster called name, served by another process,
	// runs; exited receives that process's end (an early exit is an error).
	WaitRunning(ctx context.Context, name string, exited <-chan error) (Info, error)
	// LogPath is where a detached owner of the cluster called name writes its log.
	LogPath(name string) string
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

// Existing is the optional capability of a cluster Gauntlet did not make (one
// the user already has, reached through a kubeconfig): it holds only what its
// owner installed, so faults use an in-cluster chaos tool when one is there and
// otherwise only what the Kubernetes API offers (pod deletion).
type Existing interface {
	// Existing reports whether the cluster was there before Gauntlet.
	Existing() bool
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
