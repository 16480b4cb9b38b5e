// Package testkit replays a Gauntlet reproducer as a Go test and asserts the
// invariant its alarm found violated. The regression tests `gauntlet run
// --go-tests` writes are a Reproducer literal handed to Run; it can be
// called from hand-written tests too.
//
// Where it runs: with KUBECONFIG set (or WithKubeconfig), on that cluster,
// where the operator under test must already run. Otherwise on an embedded
// cluster of its own (cluster/local, as a campaign worker): Run brings it up,
// deploys the reproducer's target (WithTarget or GAUNTLET_TARGET override it;
// the bundled Valkey operator's binary comes from WithOperatorBinary,
// GAUNTLET_OPERATOR_BINARY or the repository's bin/valkey-operator), replays
// the steps, judges them and deletes the cluster when the test ends. The
// embedded cluster needs root and Gauntlet's control-plane binaries (`make
// controlplane`); where it cannot run, Run skips with the reason, and in CI
// (CI=true or GAUNTLET_REQUIRE_E2E=1) fails instead.
//
// The embedded cluster runs each pod container under a shim that is the
// running binary re-executed: importing testkit installs that entry point (an
// init function calling local.Init), so a test package needs no TestMain.
//
// This is a test helper package: unlike the harness's libraries (docs/architecture.md §6,
// "library code never takes *testing.T"), Run takes a testing.TB and reports
// through it. The replay and judging underneath return errors and are plain
// Go.
package testkit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// The vocabulary of a reproducer is shared with the generator (package
// reports) and the model: these are the same types under the names a test
// uses.
type (
	// Reproducer is a minimized sequence of desired states and the alarm it
	// raises (see reports.Reproducer for every field).
	Reproducer = reports.Reproducer
	// CRDRef names the custom resource type the steps declare.
	CRDRef = reports.CRDRef
	// Fault is a fault a step runs with.
	Fault = reports.ReproFault
	// Object is a desired state.
	Object = model.Object
	// Evidence is one fact behind the alarm; with a path and an expected
	// value it is a field the test asserts.
	Evidence = model.Evidence
)

// PodKill is the fault kind Run replays on any cluster: the named pods are
// deleted with grace period 0. Any other kind makes Run skip.
const PodKill = reports.PodKillFault

// MustObject decodes a desired state written as JSON (numbers keep their
// exact text); it panics on malformed JSON, which only a hand edit of a
// generated test can produce.
func MustObject(js string) Object {
	v := MustJSON(js)
	m, ok := v.(map[string]any)
	if !ok {
		panic(fmt.Sprintf("testkit.MustObject: %.80q is not a JSON object", js))
	}
	return m
}

// MustJSON decodes a JSON value (numbers keep their exact text as
// json.Number); it panics on malformed JSON.
func MustJSON(js string) any {
	v, err := decodeJSON([]byte(js))
	if err != nil {
		panic(fmt.Sprintf("testkit.MustJSON: %v", err))
	}
	return v
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode JSON %.80q: %w", b, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode JSON %.80q: trailing data", b)
	}
	return v, nil
}

// Option configures Run. Each has an environment variable it takes
// precedence over.
type Option func(*options)

type options struct {
	kubeconfig   string
	target       string
	operatorBin  string
	repo         string
	namespace    string
	stateRoot    string
	imageMapping string
	nodes        int
	log          *slog.Logger
}

// WithKubeconfig replays on the cluster this kubeconfig names, where the
// operator must already run (default $KUBECONFIG). Empty, or KUBECONFIG
// unset: an embedded cluster.
func WithKubeconfig(path string) Option { return func(o *options) { o.kubeconfig = path } }

// WithTarget deploys this target on the embedded cluster instead of the
// reproducer's: a built-in name ("valkey") or a target file's path (default
// $GAUNTLET_TARGET, then Reproducer.Target).
func WithTarget(spec string) Option { return func(o *options) { o.target = spec } }

// WithOperatorBinary is the bundled Valkey operator's binary the embedded
// cluster maps its image to (default $GAUNTLET_OPERATOR_BINARY, then
// bin/valkey-operator in the Gauntlet repository).
func WithOperatorBinary(path string) Option { return func(o *options) { o.operatorBin = path } }

// WithRepo is the Gauntlet repository, where the built-in targets' files live
// (default $GAUNTLET_REPO, then the repository above the working directory,
// then the module's own source folder).
func WithRepo(dir string) Option { return func(o *options) { o.repo = dir } }

// WithNamespace declares the custom resource in this namespace instead of the
// reproducer's (default $GAUNTLET_NAMESPACE).
func WithNamespace(ns string) Option { return func(o *options) { o.namespace = ns } }

// WithStateRoot is the embedded cluster's state root (default
// $GAUNTLET_STATE_DIR, then /var/lib/gauntlet, where `gauntlet cluster gc`
// finds what a killed test left).
func WithStateRoot(dir string) Option { return func(o *options) { o.stateRoot = dir } }

// WithImageMapping is an image-mapping file for the embedded cluster, merged
// in front of the defaults (for an operator other than the bundled one).
func WithImageMapping(path string) Option { return func(o *options) { o.imageMapping = path } }

// WithNodes is the embedded cluster's node count (default 3).
func WithNodes(n int) Option { return func(o *options) { o.nodes = n } }

// WithLogger receives the embedded cluster's and the deployment's progress
// (default: discarded, or standard error when GAUNTLET_E2E_LOG is set).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

func newOptions(opts []Option) options {
	o := options{
		kubeconfig:  os.Getenv("KUBECONFIG"),
		target:      os.Getenv("GAUNTLET_TARGET"),
		operatorBin: os.Getenv("GAUNTLET_OPERATOR_BINARY"),
		repo:        os.Getenv("GAUNTLET_REPO"),
		namespace:   os.Getenv("GAUNTLET_NAMESPACE"),
	}
	if os.Getenv("GAUNTLET_E2E_LOG") != "" {
		o.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// setupBudget bounds bringing up an embedded cluster and deploying the
// operator (the deploy steps' waits are 3 minutes each by default).
const setupBudget = 6 * time.Minute

// Run replays r and asserts the invariant its alarm found violated
// (r.Assertion): it fails tb while the bug is there and passes once it is
// fixed. Each step's desired state is declared with server-side apply (the CR
// deleted first for a recreate step); pod-kill faults delete the recorded
// pods with grace period 0, before the step's desired state is declared or
// once it converged, and wait for their replacements. A step has converged
// when the CR's status.observedGeneration has caught up (where the operator
// publishes it), the namespace's objects have not changed for r.Quiet and its
// pods and workloads are ready — or, when they are not, once nothing changed
// for 30 s (the health check then judges them) — within r.ConvergeTimeout.
//
// On an embedded cluster the target's fixtures (objects its CRs refer to,
// such as a password Secret) are created in the namespace, as a campaign
// does; on a KUBECONFIG cluster they must exist already, and a namespace and
// CR the test created are deleted afterwards. A failing test logs the tail of
// the deployed operator's log. A reproducer that needs a fault other than a
// pod-kill is skipped with a message naming it and `gauntlet reproduce`.
func Run(tb testing.TB, r Reproducer, opts ...Option) {
	tb.Helper()
	o := newOptions(opts)
	r = r.WithDefaults()
	if o.namespace != "" {
		r.Namespace = o.namespace
	}
	if err := r.Validate(); err != nil {
		tb.Fatalf("testkit: reproducer %q: %v", r.Name, err)
	}
	a, _ := r.Assertion() // valid: Validate checked it
	if msg := unreplayable(r); msg != "" {
		tb.Skip(msg)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), setupBudget+replayBudget(r))
	defer cancel()

	env := setUp(ctx, tb, r, o)
	rp, err := newReplayer(ctx, env.config, r, func(format string, args ...any) { tb.Logf("testkit: "+format, args...) })
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	rp.cleanup = !env.embedded
	started := time.Now()
	fatal := func(err error) {
		tb.Helper()
		env.logOperator(ctx, tb, started)
		tb.Fatalf("testkit: %v\n(while replaying %s)", err, r.Alarm())
	}
	created, err := rp.ensureNamespace(ctx)
	if err != nil {
		fatal(err)
	}
	if created && rp.cleanup {
		tb.Cleanup(func() {
			if err := rp.deleteNamespace(context.WithoutCancel(ctx)); err != nil {
				tb.Errorf("testkit: %v", err)
			}
		})
	}
	if err := env.fixtures(ctx, rp.namespace); err != nil {
		fatal(err)
	}
	for i, desired := range r.Steps {
		fresh, err := rp.step(ctx, i, desired, slices.Contains(r.Recreate, i), r.Faults[i])
		if fresh != "" && rp.cleanup {
			tb.Cleanup(func() {
				if err := rp.deleteCR(context.WithoutCancel(ctx), fresh); err != nil {
					tb.Errorf("testkit: %v", err)
				}
			})
		}
		if err != nil {
			fatal(err)
		}
	}
	violations, err := rp.check(ctx, a)
	if err != nil {
		fatal(err)
	}
	if len(violations) == 0 {
		return
	}
	env.logOperator(ctx, tb, started)
	tb.Errorf("testkit: the invariant %q does not hold after the reproducer's %d step(s):\n  %s\nThe alarm it reproduces: %s",
		a.Check, len(r.Steps), strings.Join(violations, "\n  "), r.Alarm())
}

// unreplayable is the skip message of a reproducer that needs a fault Run
// cannot inject ("" when every fault is a pod-kill).
func unreplayable(r Reproducer) string {
	var needs []string
	for i := range len(r.Steps) {
		for _, f := range r.Faults[i] {
			if f.Kind != PodKill && !slices.Contains(needs, f.Kind) {
				needs = append(needs, f.Kind)
			}
		}
	}
	if len(needs) == 0 {
		return ""
	}
	dir := r.ReplayDir
	if dir == "" {
		dir = "<dir>"
	}
	what := "the fault " + needs[0]
	if len(needs) > 1 {
		what = "the faults " + strings.Join(needs[:len(needs)-1], ", ") + " and " + needs[len(needs)-1]
	}
	return "this reproducer needs " + what + ", which the test kit cannot inject (it replays pod kills only): replay it with `gauntlet reproduce " + dir + "`"
}

// replayBudget bounds the replay: a convergence timeout per step, two more
// for the namespace and the checks, and per pod-kill fault one per pod (its
// lookup) and three more (two replacement waits and the settling).
func replayBudget(r Reproducer) time.Duration {
	waits := len(r.Steps) + 2
	for _, fs := range r.Faults {
		for _, f := range fs {
			if f.Kind == PodKill {
				waits += len(f.Pods) + 3
			}
		}
	}
	return time.Duration(waits) * r.ConvergeTimeout
}
