package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Deployment is a target's operator installed on a cluster the way a campaign
// worker installs it. The test kit (package testkit) uses it to run generated
// Go tests on an embedded cluster of their own.
type Deployment struct {
	k      *kube
	target *targets.Target
	// attached: the operator ran already (Attach); nothing was installed.
	attached bool
}

// Deploy installs t's operator on c as a campaign worker does: the deploy
// steps in order (CRDs, namespaces and RBAC first within a step, each step's
// wait conditions and pause), then the out-of-cluster operator command when
// the target has one. log may be nil. Call Stop before deleting the cluster.
func Deploy(ctx context.Context, c cluster.Cluster, t *targets.Target, log *slog.Logger, opts ...DeployOption) (*Deployment, error) {
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
	for _, o := range opts {
		o(k)
	}
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

// Attach is a Deployment of t's operator that already runs on the cluster cfg
// reaches (nothing is installed; Stop does nothing): the operator's pods are
// found by the target's operator namespace and labels, else by the selector of
// the Deployment its operator deploy step declares. t may be nil (no fixtures,
// no operator faults).
func Attach(cfg *rest.Config, name string, t *targets.Target, log *slog.Logger) (*Deployment, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	rk, err := replay.NewKube(cfg, name, log)
	if err != nil {
		return nil, err
	}
	k := &kube{Kube: rk, cs: rk.Clientset(), log: log}
	if t == nil {
		t = &targets.Target{Name: "(none)"}
	}
	k.opNS, k.opLabels = operatorOf(t)
	k.SetOperator(k.opNS, k.opLabels)
	return &Deployment{k: k, target: t, attached: true}, nil
}

// operatorOf is where t's operator pods are: its operator namespace and
// labels, else the namespace and selector of the Deployment its operator
// deploy step declares.
func operatorOf(t *targets.Target) (string, map[string]string) {
	ns, labels := t.Operator.Namespace, t.Operator.Labels
	if len(labels) > 0 {
		return ns, labels
	}
	for _, step := range t.Deploy {
		if !step.Operator {
			continue
		}
		objs, err := targets.Render(step)
		if err != nil {
			continue
		}
		for _, o := range objs {
			if o["kind"] != "Deployment" {
				continue
			}
			sel, _, _ := unstructured.NestedStringMap(o, "spec", "selector", "matchLabels")
			ons := (&unstructured.Unstructured{Object: o}).GetNamespace()
			if ons == "" {
				ons = step.Namespace
			}
			return ons, sel
		}
	}
	return ns, labels
}

// ErrFaultsUnsupported is returned by Deployment.Replay for a reproducer
// whose faults the cluster's fault back end cannot inject.
var ErrFaultsUnsupported = errors.New("the cluster cannot inject the reproducer's faults")

// ReplayOptions tune Deployment.Replay.
type ReplayOptions struct {
	// Namespace is where the replay declares the custom resource (created
	// unless it exists; the target's fixtures are applied in it on a cluster
	// the deployment installed). It is left in place for the caller to judge
	// and delete.
	Namespace string
	// Converge tunes convergence (the campaign's defaults for what is zero).
	Converge ConvergeOptions
	// Judge has the oracles (the defaults configured from the target, and
	// the target's own) judge every step after the seed, as minimization
	// does; their findings are on the step records.
	Judge bool
}

// ReplayOutcome is what a replay did and reached.
type ReplayOutcome struct {
	// Steps are the step records, the seed's first: when each converged (or
	// timed out, got stuck, was refused), the faults injected, and the
	// findings: the harness's own (convergence, apply), and the oracles' with
	// ReplayOptions.Judge.
	Steps []*StepRecord
	// Final is the state the last step reached.
	Final *model.Snapshot
	// FaultBackend names the fault back end the replay injected with ("" when
	// the reproducer has no fault).
	FaultBackend string
}

// Replay replays rep on the deployment's cluster exactly as a campaign's
// minimization does (session.run for the seed and each step: declared, its
// fault injected, held and healed, converged by replay's rule), judging the
// steps with the oracles when asked (package testkit asserts the
// reproducer's invariant on what it reached, or on those findings). Faults go through the cluster's back end
// (faults.For: the embedded cluster's own; Chaos Mesh elsewhere) or, on an
// attached cluster without Chaos Mesh, pod kills through the API
// (faults.API). A fault kind the back end cannot inject is
// ErrFaultsUnsupported naming it: a replay without the fault would not test
// the bug.
func (d *Deployment) Replay(ctx context.Context, rep *replay.Reproducer, o ReplayOptions) (*ReplayOutcome, error) {
	if o.Namespace == "" {
		return nil, errors.New("replay: ReplayOptions.Namespace is required")
	}
	cfg := Config{Target: d.target, Logger: d.k.log, Converge: o.Converge}.withDefaults()
	r := &runner{cfg: cfg, target: d.target, base: rep.Seed, lastAppend: new(atomic.Int64), publishesGen: new(atomic.Bool)}
	if o.Judge {
		r.oracles = append(append([]oracles.Oracle{}, cfg.Oracles...), d.target.Oracles...)
	}
	e := &env{cluster: d.k.cluster, kube: d.k, prefix: "replay"}
	out := &ReplayOutcome{}
	if kinds := rep.FaultKinds(); len(kinds) > 0 {
		inj, backend, err := d.injector(ctx)
		if err != nil {
			return nil, err
		}
		ok, unsupported := supportedKinds(inj, kinds, len(d.target.Operator.Command) > 0, d.k.view != nil)
		if len(unsupported) > 0 {
			return nil, fmt.Errorf("%w (fault back end: %s): %s", ErrFaultsUnsupported, backend, strings.Join(unsupported, "; "))
		}
		e.inj, r.faultKinds, out.FaultBackend = inj, ok, backend
		r.cfg.Faults = (&FaultOptions{Kinds: ok}).withDefaults()
	}
	var fixtures []string
	if !d.attached {
		fixtures = d.target.Fixtures
	}
	sess, err := r.openSession(ctx, e, o.Namespace, fixtures)
	if err != nil {
		return nil, err
	}
	defer func() {
		sess.stopWorkload(ctx)
		sess.watch.close()
	}()
	out.Steps, out.Final, err = sess.replaySteps(ctx, rep.Seed, rep.Steps, o.Judge)
	return out, err
}

// injector is the fault back end of the deployment's cluster and its name.
func (d *Deployment) injector(ctx context.Context) (faults.Injector, string, error) {
	if d.k.cluster != nil {
		inj, err := faults.For(ctx, d.k.cluster)
		if err != nil {
			return nil, "", err
		}
		return inj, fmt.Sprintf("%T", inj), nil
	}
	inj, err := faults.NewChaosMesh(ctx, d.k.RESTConfig())
	if err == nil {
		return inj, "Chaos Mesh", nil
	}
	d.k.log.Info("no Chaos Mesh on the cluster: pod kills through the API only", "err", err)
	return faults.NewAPI(d.k.cs), "the API (pod kills only; no Chaos Mesh: " + err.Error() + ")", nil
}

// Readiness is the campaign's convergence readiness rule over a namespace's
// objects keyed by model.ObjectKey strings: what is not ready (pods not
// Running and Ready, Deployments, StatefulSets and DaemonSets not rolled out)
// and whether the custom resource (key cr) reports its current generation
// where its status publishes observedGeneration.
func Readiness(objs map[string]model.Object, cr string) (notReady []string, generationObserved bool) {
	return replay.Readiness(objs, cr, false)
}
