package local

import (
	"context"
	"time"

	cl "github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
)

// BackendName is the embedded back end's name (--backend local).
const BackendName = "local"

// Provider creates embedded clusters with a common set of options; it implements
// cluster.Backend and cluster.Owner.
type Provider struct {
	// Options are used for every cluster; Name is replaced by Create's argument.
	Options Options
}

// Name is "local".
func (p Provider) Name() string { return BackendName }

// Create creates an embedded cluster called name.
func (p Provider) Create(ctx context.Context, name string) (cl.Cluster, error) {
	o := p.Options
	o.Name = name
	return Create(ctx, o)
}

// List returns the embedded clusters recorded under the provider's state root.
func (p Provider) List(context.Context) ([]cl.Info, error) {
	infos, err := List(p.Options.StateRoot)
	if err != nil {
		return nil, err
	}
	out := make([]cl.Info, len(infos))
	for i, in := range infos {
		out[i] = in.info()
	}
	return out, nil
}

// info is the back-end-neutral record of the cluster.
func (in Info) info() cl.Info {
	out := cl.Info{Backend: BackendName, Name: in.Name, Phase: in.Phase, Running: in.Running, Server: in.Server,
		Kubeconfig: in.Kubeconfig, Nodes: len(in.Nodes)}
	if in.PodCIDR.IsValid() {
		out.PodCIDR = in.PodCIDR.String()
	}
	return out
}

// Delete deletes the embedded cluster called name: its owner is asked to stop
// (a minute at most), then whatever is left is removed.
func (p Provider) Delete(ctx context.Context, name string) error {
	return Down(ctx, p.Options.StateRoot, name, time.Minute)
}

// GC removes the embedded clusters whose owner is gone (see GC).
func (p Provider) GC(ctx context.Context) ([]string, error) { return GC(ctx, p.Options.StateRoot) }

// Serve creates the cluster called name and keeps it until ctx ends (see Serve).
func (p Provider) Serve(ctx context.Context, name string, ready func(cl.Cluster)) error {
	o := p.Options
	o.Name = name
	return Serve(ctx, o, func(c *Cluster) {
		if ready != nil {
			ready(c)
		}
	})
}

// WaitRunning waits until the cluster called name, served by another process, runs.
func (p Provider) WaitRunning(ctx context.Context, name string, exited <-chan error) (cl.Info, error) {
	in, err := WaitRunning(ctx, p.Options.StateRoot, name, exited)
	if err != nil {
		return cl.Info{}, err
	}
	return in.info(), nil
}

// LogPath is where a detached owner of the cluster called name writes its log.
func (p Provider) LogPath(name string) string { return LogPath(p.Options.StateRoot, name) }

// WithImageRules returns a provider whose clusters try rules (a target's image
// mapping) after the provider's own mapping file and rules, before the shipped
// defaults.
func (p Provider) WithImageRules(rules []imagemap.Rule) cl.Provider {
	q := p
	q.Options.MappingRules = append(append([]imagemap.Rule(nil), p.Options.MappingRules...), rules...)
	return q
}

// UnmappedImages returns the images among imgs that this provider's clusters
// could not run: no rule of its mapping (file, rules, shipped defaults) maps
// them. It starts nothing.
func (p Provider) UnmappedImages(imgs []string) ([]string, error) {
	rules, err := mappingRules(p.Options)
	if err != nil {
		return nil, err
	}
	return imagemap.Unmapped(rules, p.Options.OperatorBinary, imgs)
}

var (
	_ cl.Cluster = (*Cluster)(nil)
	_ cl.Backend = Provider{}
	_ cl.Owner   = Provider{}
)
