package local

import (
	"github.com/gauntlet-dev/gauntlet/cluster/internal/controlplane"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
)

// Init must be the first call in main (and in TestMain of tests that create
// clusters): when the process is a re-executed container shim it runs the
// container and never returns; otherwise it returns false at once.
func Init() bool { return container.Init() }

// KubernetesVersion is the Kubernetes release the embedded control plane runs.
const KubernetesVersion = controlplane.Version

// ControlPlaneBinDir is the cache folder of the pinned control-plane build.
func ControlPlaneBinDir() string { return controlplane.DefaultBinDir() }
