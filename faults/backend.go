package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

// For returns the fault back end for c: Native for a cluster that injects
// faults itself (cluster.ProcessFaults: the embedded cluster); on a cluster
// Gauntlet did not make (cluster.Existing), Chaos Mesh when it is installed there
// and otherwise API (pod kill and delete only); Chaos Mesh for any other cluster
// (kind in particular), which needs it installed (ErrChaosMeshMissing, naming the fix, if not).
// opts apply to the Chaos Mesh back end only; on a cluster whose nodes share this
// machine's kernel (cluster.HostKernel) without netem, Chaos Mesh refuses delay and loss.
func For(ctx context.Context, c cluster.Cluster, opts ...ChaosMeshOption) (Injector, error) {
	if c == nil {
		return nil, errors.New("faults: For needs a cluster")
	}
	if pf, ok := c.(cluster.ProcessFaults); ok {
		return NewNative(pf), nil
	}
	if ex, ok := c.(cluster.Existing); ok && ex.Existing() {
		return forExisting(ctx, c, opts...)
	}
	if hk, ok := c.(cluster.HostKernel); ok && hk.SharesHostKernel() {
		if ok, why := Netem("/proc/config.gz"); !ok {
			opts = append([]ChaosMeshOption{WithoutNetem(why)}, opts...)
		}
	}
	cm, err := NewChaosMesh(ctx, c.RESTConfig(), opts...)
	if err != nil {
		return nil, fmt.Errorf("faults: cluster %s: %w", c.Name(), err)
	}
	return cm, nil
}

// forExisting is For on a cluster Gauntlet did not make: Chaos Mesh when the
// cluster serves it, else the API back end.
func forExisting(ctx context.Context, c cluster.Cluster, opts ...ChaosMeshOption) (Injector, error) {
	cfg := c.RESTConfig()
	dcfg := rest.CopyConfig(cfg)
	if dcfg.Timeout == 0 {
		dcfg.Timeout = 30 * time.Second // discovery takes no context
	}
	dc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return nil, fmt.Errorf("faults: cluster %s: discovery client: %w", c.Name(), err)
	}
	switch err := CheckChaosMesh(ctx, dc); {
	case err == nil:
		cm, err := NewChaosMesh(ctx, cfg, opts...)
		if err != nil {
			return nil, fmt.Errorf("faults: cluster %s: %w", c.Name(), err)
		}
		return cm, nil
	case errors.Is(err, ErrChaosMeshMissing):
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("faults: cluster %s: %w", c.Name(), err)
		}
		return NewAPI(cs), nil
	default:
		return nil, fmt.Errorf("faults: cluster %s: %w", c.Name(), err)
	}
}
