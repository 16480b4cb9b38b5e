package kind

import (
	"context"
	"fmt"

	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

// BackendName is the kind back end's name (--backend kind).
const BackendName = "kind"

// Name is "kind".
func (p Provider) Name() string { return BackendName }

// List returns the kind clusters Gauntlet recorded under the provider's state root.
func (p Provider) List(context.Context) ([]cluster.Info, error) {
	infos, err := List(p.Options.StateDir)
	if err != nil {
		return nil, err
	}
	out := make([]cluster.Info, len(infos))
	for i, in := range infos {
		phase := "Running"
		if !in.Running {
			phase = "Abandoned"
		}
		out[i] = cluster.Info{Backend: BackendName, Name: in.Name, Phase: phase, Running: in.Running, PodCIDR: in.PodSubnet, Kubeconfig: in.Kubeconfig}
	}
	return out, nil
}

// Delete removes the recorded kind cluster called name: its nodes, host route,
// kubeconfig and record. A cluster whose owner process runs is refused: that
// process (a campaign) deletes it when it ends.
func (p Provider) Delete(ctx context.Context, name string) error {
	reg := registry{dir: recordsDir(p.Options.StateDir)}
	unlock, err := reg.lock()
	if err != nil {
		return err
	}
	recs, err := reg.list()
	unlock()
	if err != nil {
		return err
	}
	for _, r := range recs {
		if r.Name != name {
			continue
		}
		if r.ownerAlive() {
			return fmt.Errorf("kind: cluster %s belongs to the running process %d, which deletes it when it ends: stop that process (or wait for it)", name, r.Owner)
		}
		if err := Available(ctx); err != nil {
			return fmt.Errorf("kind: delete %s: %w", name, err)
		}
		return purge(ctx, kindcluster.NewProvider(kindcluster.ProviderWithDocker()), reg, r)
	}
	return fmt.Errorf("%w: kind cluster %s is not recorded in %s (see `gauntlet cluster list`)", cluster.ErrNotFound, name, reg.dir)
}

// GC removes the kind clusters whose owner is gone (see GC).
func (p Provider) GC(ctx context.Context) ([]string, error) { return GC(ctx, p.Options.StateDir) }

var _ cluster.Backend = Provider{}
