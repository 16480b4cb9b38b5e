package faults

import (
	"context"
	"errors"
	"fmt"

	"github.com/gauntlet-dev/gauntlet/cluster"
)

// For returns the fault back end for c: Native for a cluster that injects
// faults itself (cluster.ProcessFaults: the embedded cluster), Chaos Mesh for any other cluster (kind in particular), which
// needs Chaos Mesh installed there (ErrChaosMeshMissing, naming the fix, if not).
// opts apply to the Chaos Mesh back end only; on a cluster whose nodes share this
// machine's kernel (cluster.HostKernel) without netem, Chaos Mesh refuses delay and loss.
func For(ctx context.Context, c cluster.Cluster, opts ...ChaosMeshOption) (Injector, error) {
	if c == nil {
		return nil, errors.New("faults: For needs a cluster")
	}
	if pf, ok := c.(cluster.ProcessFaults); ok {
		return NewNative(pf), nil
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
