// Package kindturns makes the kind clusters that end-to-end tests create on this machine come
// up one at a time, across the test processes of a run: kind gives a node container's systemd
// 30 s to boot, which several nodes booting at once beside the embedded clusters' control planes
// can miss on 2 cores. Only creation takes turns; the clusters then run side by side. It is
// test support.
package kindturns

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
)

// lockFile is the machine-wide lock the creations take turns on.
var lockFile = filepath.Join(os.TempDir(), "gauntlet-test-kind-create.lock")

// Provider wraps p so that its Create waits for any other test's kind cluster creation on this
// machine to finish first.
func Provider(p cluster.Provider) cluster.Provider { return turns{p} }

type turns struct{ p cluster.Provider }

// Create takes the machine-wide turn, then creates the cluster.
func (t turns) Create(ctx context.Context, name string) (cluster.Cluster, error) {
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kind creation turn: %w", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-locked:
		defer f.Close() // releases the lock
		if err != nil {
			return nil, fmt.Errorf("kind creation turn: lock %s: %w", lockFile, err)
		}
	case <-ctx.Done():
		go func() { <-locked; f.Close() }() // the turn, once it comes, is given back
		return nil, fmt.Errorf("kind creation turn: waiting for %s: %w", lockFile, ctx.Err())
	}
	return t.p.Create(ctx, name)
}

// imageAssembler is the provider interface through which a campaign hands kind
// the target's image mapping (campaign.prepareImages).
type imageAssembler interface {
	WithMappedImages(rules []imagemap.Rule, required, optional []string) (cluster.Provider, error)
}

// WithMappedImages passes the target's image mapping on to the wrapped
// provider and keeps the turns: without it a campaign on a wrapped kind
// provider would not assemble the operator's images, and its Deployments would
// never become available.
func (t turns) WithMappedImages(rules []imagemap.Rule, required, optional []string) (cluster.Provider, error) {
	a, ok := t.p.(imageAssembler)
	if !ok {
		return t, nil
	}
	np, err := a.WithMappedImages(rules, required, optional)
	if err != nil {
		return nil, err
	}
	return turns{np}, nil
}
