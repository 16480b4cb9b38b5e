package campaign

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Deployment is a target's operator installed on a cluster the way a campaign
// worker installs it. The test kit (package testkit) uses it to run generated
// Go tests on an embedded cluster of their own.
type Deployment struct {
	k      *kube
	target *targets.Target
}

// Deploy installs t's operator on c as a campaign worker does: the deploy
// steps in order (CRDs, namespaces and RBAC first within a step, each step's
// wait conditions and pause), then the out-of-cluster operator command when
// the target has one. log may be nil. Call Stop before deleting the cluster.
func Deploy(ctx context.Context, c cluster.Cluster, t *targets.Target, log *slog.Logger) (*Deployment, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	k, err := newKube(c, log)
	if err != nil {
		return nil, err
	}
	stateDir, err := os.MkdirTemp("", "gauntlet-operator-")
	if err != nil {
		return nil, fmt.Errorf("operator state folder: %w", err)
	}
	k.stateDir = stateDir
	if err := k.deploy(ctx, t, stateDir); err != nil {
		k.stop()
		return nil, fmt.Errorf("cluster %s: deploy the operator of target %s: %w", c.Name(), t.Name, err)
	}
	return &Deployment{k: k, target: t}, nil
}

// ApplyFixtures creates the target's fixtures (the objects its CRs refer to)
// in namespace ns, which must exist.
func (d *Deployment) ApplyFixtures(ctx context.Context, ns string) error {
	return d.k.applyFixtures(ctx, d.target.Fixtures, ns)
}

// OperatorLog is what the operator logged since `since` (its pods' logs, or
// an out-of-cluster operator's output).
func (d *Deployment) OperatorLog(ctx context.Context, since time.Time) string {
	return d.k.operatorLog(ctx, since)
}

// Stop ends an out-of-cluster operator the deployment started and removes its
// state folder; an in-cluster operator goes with its cluster.
func (d *Deployment) Stop() { d.k.stop() }

// Readiness is the campaign's convergence readiness rule over a namespace's
// objects keyed by model.ObjectKey strings: what is not ready (pods not
// Running and Ready, Deployments, StatefulSets and DaemonSets not rolled out)
// and whether the custom resource (key cr) reports its current generation
// where its status publishes observedGeneration.
func Readiness(objs map[string]model.Object, cr string) (notReady []string, generationObserved bool) {
	return readinessOf(objs, cr, false)
}
