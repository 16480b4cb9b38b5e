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
// replay is the campaign's (package replay, through campaign.Deployment):
// the same declaring, fault injection and convergence rule, so the test does
// what the run that found the bug did, every fault kind included. The
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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
	"github.com/gauntlet-dev/gauntlet/reports"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// The vocabulary of a reproducer is package replay's, the one the campaign
// writes to reproducer.json: these are the same types under the names a test
// uses.
type (
	// Reproducer is a minimized sequence of desired states and the alarm it
	// raises (see replay.Reproducer for every field).
	Reproducer = replay.Reproducer
	// CRDRef names the custom resource type the steps declare.
	CRDRef = replay.CRDRef
	// Step is one desired state after the seed, with its fault.
	Step = replay.Step
	// FaultPlan is the fault a step injects, targeted on the live system as
	// the campaign targeted it.
	FaultPlan = replay.FaultPlan
	// Object is a desired state.
	Object = model.Object
	// Evidence is one fact behind the alarm; with a path and an expected
	// value it is a field the test asserts.
	Evidence = model.Evidence
)

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
		operatorBin: os.Getenv(operatorbin.Env),
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
// (reports.AssertionOf): it fails tb while the bug is there and passes once
// it is fixed. The replay is the campaign's own (campaign.Deployment.Replay,
// through package replay): the seed and each step declared with server-side
// apply (the emptied-map merge patch first, again while an admission webhook
// cannot be called, the CR deleted first for a recreate step), each step's
// fault injected, held and healed as the campaign did (every kind on the
// embedded cluster; on a KUBECONFIG cluster what its back end offers: Chaos
// Mesh when installed, else pod kills), and each step waited for by the
// campaign's convergence rule (replay.WaitConverged) with r.Quiet and
// r.ConvergeTimeout.
//
// On an embedded cluster the target's fixtures (objects its CRs refer to,
// such as a password Secret) are created in the namespace, as a campaign
// does; on a KUBECONFIG cluster they must exist already, and a namespace and
// CR the test created are deleted afterwards. A failing test logs the tail of
// the deployed operator's log. A reproducer whose fault the cluster cannot
// inject skips, naming it (in CI it fails): the embedded cluster injects
// every kind.
func Run(tb testing.TB, r Reproducer, opts ...Option) {
	tb.Helper()
	o := newOptions(opts)
	r = r.WithDefaults()
	if o.namespace != "" {
		r.Namespace = o.namespace
	}
	if err := reports.ValidateGoTest(r); err != nil {
		tb.Fatalf("testkit: reproducer %q: %v", r.Name, err)
	}
	a, _ := reports.AssertionOf(r) // valid: ValidateGoTest checked it
	ctx, cancel := context.WithTimeout(tb.Context(), setupBudget+replayBudget(r))
	defer cancel()

	env := setUp(ctx, tb, r, o)
	chk, err := newChecker(env.config, r)
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	if env.deployment == nil {
		if env.deployment, err = campaign.Attach(env.config, "KUBECONFIG", attachTarget(tb, r, o), o.log); err != nil {
			tb.Fatalf("testkit: %v", err)
		}
		cleanUpAfter(ctx, tb, chk, r)
	}
	started := time.Now()
	fatal := func(err error) {
		tb.Helper()
		env.logOperator(ctx, tb, started)
		tb.Fatalf("testkit: %v\n(while replaying %s)", err, r.Alarm())
	}
	plain, err := plainSteps(r)
	if err != nil {
		fatal(err)
	}
	out, err := env.deployment.Replay(ctx, &plain, campaign.ReplayOptions{Namespace: r.Namespace,
		Converge: campaign.ConvergeOptions{Quiet: r.Quiet, Timeout: r.ConvergeTimeout}, Judge: a.Judge})
	if errors.Is(err, campaign.ErrFaultsUnsupported) {
		testenv.Unavailable(tb, "testkit: %v; the embedded cluster (KUBECONFIG unset) injects every kind, or replay it with `gauntlet reproduce %s`", err, replayDir(r))
	}
	if out != nil {
		logSteps(tb, out)
	}
	if err != nil {
		fatal(err)
	}
	violations, err := chk.check(ctx, a)
	if err != nil {
		fatal(err)
	}
	if a.Judge {
		violations = append(violations, fired(out, a.Signature)...)
	}
	if len(violations) == 0 {
		return
	}
	env.logOperator(ctx, tb, started)
	tb.Errorf("testkit: the invariant %q does not hold after the reproducer's seed and %d step(s):\n  %s\nThe alarm it reproduces: %s",
		a.Check, len(r.Steps), strings.Join(violations, "\n  "), r.Alarm())
}

// plainSteps is r with its seed and desired states as the API machinery
// takes them (plainJSON).
func plainSteps(r Reproducer) (Reproducer, error) {
	var err error
	if r.Seed, err = plainJSON(r.Seed); err != nil {
		return r, fmt.Errorf("seed: %w", err)
	}
	r.Steps = append([]Step(nil), r.Steps...)
	for i := range r.Steps {
		if r.Steps[i].Desired, err = plainJSON(r.Steps[i].Desired); err != nil {
			return r, fmt.Errorf("step %d: %w", i+1, err)
		}
	}
	return r, nil
}

// plainJSON turns a JSON value with json.Number leaves (MustObject's) into
// the int64 and float64 leaves the API machinery expects.
func plainJSON(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode the desired state: %w", err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode the desired state: %w", err)
	}
	return out, nil
}

// attachTarget is the target whose operator runs on a KUBECONFIG cluster
// (to find its pods for operator faults), nil when it names none or cannot
// be read (logged).
func attachTarget(tb testing.TB, r Reproducer, o options) *targets.Target {
	tb.Helper()
	spec := o.target
	if spec == "" {
		spec = r.Target
	}
	if spec == "" {
		return nil
	}
	repo := o.repo
	if repo == "" {
		repo = findRepo()
	}
	t, err := targets.Resolve(spec, repo)
	if err != nil {
		tb.Logf("testkit: target %s (to find the operator's pods): %v", spec, err)
		return nil
	}
	return t
}

// cleanUpAfter deletes, when the test ends, the namespace on a KUBECONFIG
// cluster when the test creates it, else the custom resource it declares.
func cleanUpAfter(ctx context.Context, tb testing.TB, chk *checker, r Reproducer) {
	tb.Helper()
	existed, err := chk.namespaceExists(ctx)
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	tb.Cleanup(func() {
		var err error
		if existed {
			err = chk.deleteCR(context.WithoutCancel(ctx), objectName(r.Seed), r.ConvergeTimeout)
		} else {
			err = chk.deleteNamespace(context.WithoutCancel(ctx), r.ConvergeTimeout)
		}
		if err != nil {
			tb.Errorf("testkit: %v", err)
		}
	})
}

// objectName is a desired state's metadata.name.
func objectName(obj Object) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	return name
}

// logSteps logs what each replayed step did: when it converged (or why not),
// the faults it injected, what stayed unready and the harness's findings.
func logSteps(tb testing.TB, out *campaign.ReplayOutcome) {
	tb.Helper()
	if out.FaultBackend != "" {
		tb.Logf("testkit: faults injected through %s", out.FaultBackend)
	}
	for i, rec := range out.Steps {
		what := "seed"
		if i > 0 {
			what = fmt.Sprintf("step %d (%s)", i, rec.Kind)
		}
		var parts []string
		switch {
		case rec.TimedOut:
			parts = append(parts, "did not converge before the timeout")
		case rec.Stuck:
			parts = append(parts, "stuck (no progress towards readiness)")
		case !rec.Converged.IsZero():
			parts = append(parts, fmt.Sprintf("converged after %v", time.Duration(rec.Timing.Converge)*time.Millisecond))
		}
		for _, f := range rec.Faults {
			fs := "fault " + f.Kind + " on " + strings.Join(f.Targets, ", ")
			if f.Unsupported != "" {
				fs += " (not injected: " + f.Unsupported + ")"
			}
			parts = append(parts, fs)
		}
		if len(rec.NotReady) > 0 {
			parts = append(parts, "not ready: "+strings.Join(rec.NotReady, "; "))
		}
		for _, f := range rec.Findings {
			parts = append(parts, f.Oracle+": "+f.Summary)
		}
		tb.Logf("testkit: %s: %s", what, strings.Join(parts, "; "))
	}
}

// fired describes each step of the replay whose findings carry signature
// (the seed's are not the sequence's), with their evidence.
func fired(out *campaign.ReplayOutcome, signature string) []string {
	var lines []string
	for i, rec := range out.Steps {
		if i == 0 {
			continue
		}
		for _, f := range rec.Findings {
			if f.Signature != signature {
				continue
			}
			l := fmt.Sprintf("step %d (%s): the %s oracle raised %s: %s", i, rec.Kind, f.Oracle, f.Signature, f.Summary)
			for _, e := range f.Evidence {
				if d := evidenceText(e); d != "" {
					l += "\n      " + d
				}
			}
			lines = append(lines, l)
		}
	}
	return lines
}

// evidenceText is one evidence in a line ("" when it says nothing).
func evidenceText(e model.Evidence) string {
	var parts []string
	if e.Object != "" {
		parts = append(parts, e.Object)
	}
	if e.Path != "" {
		parts = append(parts, e.Path)
	}
	if e.Expected != nil {
		parts = append(parts, fmt.Sprintf("expected %v", e.Expected))
	}
	if e.Actual != nil {
		parts = append(parts, fmt.Sprintf("actual %v", e.Actual))
	}
	if e.Detail != "" {
		parts = append(parts, e.Detail)
	}
	return strings.Join(parts, " ")
}

// replayDir is the folder `gauntlet reproduce` takes for r.
func replayDir(r Reproducer) string {
	if r.ReplayDir == "" {
		return "<results>/alarms/N"
	}
	return r.ReplayDir
}

// replayBudget bounds the replay: a convergence timeout for the seed and
// each step, two more for the namespace and the checks, and per fault two
// more (its hold and the convergence after it is healed).
func replayBudget(r Reproducer) time.Duration {
	waits := len(r.Steps) + 3
	for _, s := range r.Steps {
		if s.Fault != nil {
			waits += 2
		}
	}
	return time.Duration(waits) * r.ConvergeTimeout
}
