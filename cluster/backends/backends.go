// Package backends opens Gauntlet's cluster back ends by name: the one place that
// imports them all, so that commands, testkit and benchmarks name a back end by a
// string and never import its package (and back ends never import each other).
package backends

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kubeconfig"
	"github.com/gauntlet-dev/gauntlet/cluster/local"
)

// Back-end names (the --backend values).
const (
	Local      = local.BackendName
	Kind       = kind.BackendName
	Kubeconfig = kubeconfig.BackendName
)

// Default is the back end used when none is named: the embedded cluster.
const Default = Local

// about describes each back end, in the order Names lists them.
var about = []struct{ name, what string }{
	{Local, "embedded clusters in this process (the default; needs root)"},
	{Kind, "kind clusters (needs Docker)"},
	{Kubeconfig, "a cluster you already have, from --kubeconfig or $KUBECONFIG: workers get namespaces on it"},
}

// Names lists the back ends Open knows.
func Names() []string {
	out := make([]string, len(about))
	for i, a := range about {
		out[i] = a.name
	}
	return out
}

// Describe is a one-line summary of the back ends for a flag's help.
func Describe() string {
	parts := make([]string, len(about))
	for i, a := range about {
		parts[i] = a.name + ": " + a.what
	}
	return strings.Join(parts, "; ")
}

// Options configure the back end Open returns. Each field says which back ends
// use it; setting one that the named back end cannot honour is an error.
type Options struct {
	// StateRoot is where clusters are recorded on this machine (every back end;
	// default $GAUNTLET_STATE_DIR, else /var/lib/gauntlet).
	StateRoot string
	// Log receives progress (default: discarded).
	Log *slog.Logger
	// OperatorBinary is the bundled operator's binary, which its image maps to
	// (local, kind).
	OperatorBinary string
	// MappingFile is an image-mapping file tried before a target's rules and the
	// shipped defaults; MappingRules are rules tried after it (local).
	MappingFile  string
	MappingRules []imagemap.Rule
	// Nodes is the node count (local; default 3). NodeCapacity is what each node
	// advertises (local). APIServerPort fixes the API server's port (local).
	Nodes         int
	NodeCapacity  corev1.ResourceList
	APIServerPort int
	// Faults says the campaign injects faults: kind installs Chaos Mesh into every
	// cluster for them (the embedded cluster injects its own).
	Faults bool
	// Kubeconfig is the existing cluster's kubeconfig file (kubeconfig; default
	// $KUBECONFIG).
	Kubeconfig string
	// BundledOperatorImage is set when the target is the bundled Valkey operator:
	// kind assembles its image and the Valkey images from OperatorBinary and host
	// programs and loads them into every node (the embedded cluster maps them).
	BundledOperatorImage string
}

// Open returns the back end called name configured by opts, or an error naming
// the known back ends.
func Open(ctx context.Context, name string, opts Options) (cluster.Backend, error) {
	_ = ctx
	if name == "" {
		name = Default
	}
	if name != Kubeconfig && opts.Kubeconfig != "" {
		return nil, fmt.Errorf("a kubeconfig file is for the %s back end (an existing cluster), not %s: pass --backend %s, or leave the kubeconfig out", Kubeconfig, name, Kubeconfig)
	}
	switch name {
	case Local:
		if opts.MappingFile != "" {
			if _, err := imagemap.ReadFile(opts.MappingFile); err != nil {
				return nil, fmt.Errorf("back end %s: %w", name, err)
			}
		}
		return local.Provider{Options: local.Options{StateRoot: opts.StateRoot, OperatorBinary: opts.OperatorBinary,
			MappingFile: opts.MappingFile, MappingRules: opts.MappingRules, Nodes: opts.Nodes, NodeCapacity: opts.NodeCapacity,
			APIServerPort: opts.APIServerPort, Log: opts.Log}}, nil
	case Kind:
		if err := unsupported(name, map[string]bool{"image-mapping file": opts.MappingFile != "",
			"node count": opts.Nodes != 0, "node capacity": opts.NodeCapacity != nil, "API server port": opts.APIServerPort != 0}); err != nil {
			return nil, err
		}
		ko := kind.Options{StateDir: opts.StateRoot, Log: opts.Log, ChaosMesh: opts.Faults}
		if opts.BundledOperatorImage != "" {
			imgs, err := kind.BundledValkeyImages(opts.BundledOperatorImage, opts.OperatorBinary)
			if err != nil {
				return nil, fmt.Errorf("back end %s: %w", name, err)
			}
			ko.Images = imgs
		}
		return kind.Provider{Options: ko}, nil
	case Kubeconfig:
		// The cluster pulls its own images and has what its owner installed.
		if err := unsupported(name, map[string]bool{"image-mapping file": opts.MappingFile != "", "image-mapping rules": len(opts.MappingRules) > 0,
			"node count": opts.Nodes != 0, "node capacity": opts.NodeCapacity != nil, "API server port": opts.APIServerPort != 0}); err != nil {
			return nil, err
		}
		p := kubeconfig.Provider{Options: kubeconfig.Options{Kubeconfig: opts.Kubeconfig, StateRoot: opts.StateRoot, Log: opts.Log}}
		if p.KubeconfigPath() == "" {
			return nil, kubeconfig.ErrNoKubeconfig
		}
		if err := p.Check(); err != nil {
			return nil, err
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown cluster back end %q: the back ends are %s", name, strings.Join(Names(), ", "))
}

// unsupported names the options set that back end name cannot honour.
func unsupported(name string, set map[string]bool) error {
	var bad []string
	for what, on := range set {
		if on {
			bad = append(bad, what)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return fmt.Errorf("the %s back end does not use these options: %s; leave them out, or use the %s back end", name, strings.Join(bad, ", "), Local)
}

// Recorded returns every back end that records clusters on this machine under
// stateRoot, for listing and collecting them (gauntlet cluster list, gc).
func Recorded(stateRoot string, log *slog.Logger) []cluster.Backend {
	return []cluster.Backend{
		local.Provider{Options: local.Options{StateRoot: stateRoot, Log: log}},
		kind.Provider{Options: kind.Options{StateDir: stateRoot, Log: log}},
		kubeconfig.Provider{Options: kubeconfig.Options{StateRoot: stateRoot, Log: log}},
	}
}

// Init runs the embedded back end's re-executed roles (a pod container's shim):
// call it first in main (or TestMain); when it returns true the process was one
// of them and has finished.
func Init() bool { return local.Init() }

// RouteKlog sends the logs of the Kubernetes libraries the back ends embed to h.
func RouteKlog(h slog.Handler) { local.RouteKlog(h) }

// KubernetesVersion is the Kubernetes release the embedded cluster runs.
const KubernetesVersion = local.KubernetesVersion

// ControlPlaneBinDir is the cache folder of the embedded cluster's pinned control plane.
func ControlPlaneBinDir() string { return local.ControlPlaneBinDir() }
