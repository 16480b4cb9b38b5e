package findings

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Status is what replaying a bundle showed.
type Status string

// Replay statuses.
const (
	Reproduces         Status = "reproduces"
	NoLongerReproduces Status = "no longer reproduces"
	CouldNotRun        Status = "could not run"
)

// Result is one bundle's replay.
type Result struct {
	Bundle string
	Status Status
	// Detail is the alarm that fired (Reproduces), what fired instead (No
	// longer reproduces) or why the replay could not run.
	Detail   string
	Duration time.Duration
	// Script is what the bundle's reproduce.sh said on the same cluster
	// (with Options.Scripts; nil otherwise).
	Script *ScriptResult
}

// ScriptResult is one run of a bundle's reproduce.sh.
type ScriptResult struct {
	Status Status
	// Detail is the script's verdict line (or its last line, or why it could not run).
	Detail   string
	Duration time.Duration
}

// String is the result in one line (two with the script's).
func (r Result) String() string {
	s := fmt.Sprintf("%-40s %s (%s): %s", r.Bundle, r.Status, r.Duration.Round(time.Second), r.Detail)
	if r.Script != nil {
		s += fmt.Sprintf("\n%-40s reproduce.sh: %s (%s): %s", "", r.Script.Status, r.Script.Duration.Round(time.Second), r.Script.Detail)
	}
	return s
}

// Options tune Replay.
type Options struct {
	// Repo is the Gauntlet repository (target paths are relative to it).
	Repo string
	// StateRoot is the embedded clusters' state root (the back end's default when empty).
	StateRoot string
	// Log receives diagnostics (default: discarded); Progress receives one
	// line per result as it is known (default: discarded).
	Log      *slog.Logger
	Progress io.Writer
	// Scripts also runs each bundle's reproduce.sh (kubectl only) against
	// the same cluster after its replay, in a namespace of its own.
	Scripts bool
}

// Replay replays each bundle's reproducer on the embedded cluster, one at a
// time: the bundles of one target share a cluster with its operator deployed
// once, each bundle in a namespace of its own that is deleted after it. A
// bundle reproduces when a step after its seed raises the expected alarm
// again; it could not run when its target's programs are not built, the
// cluster or the operator did not come up, or its seed did not converge.
func Replay(ctx context.Context, bundles []*Bundle, o Options) []Result {
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	var out []Result
	report := func(r Result) {
		out = append(out, r)
		fmt.Fprintln(o.Progress, r)
	}
	// The bundles of a target, in order of first appearance.
	var order []string
	byTarget := map[string][]*Bundle{}
	for _, b := range bundles {
		if _, ok := byTarget[b.Meta.Target]; !ok {
			order = append(order, b.Meta.Target)
		}
		byTarget[b.Meta.Target] = append(byTarget[b.Meta.Target], b)
	}
	for _, spec := range order {
		bs := byTarget[spec]
		env, err := setUp(ctx, spec, o)
		if err != nil {
			for _, b := range bs {
				report(Result{Bundle: b.Name, Status: CouldNotRun, Detail: err.Error()})
			}
			continue
		}
		for _, b := range bs {
			if ctx.Err() != nil {
				report(Result{Bundle: b.Name, Status: CouldNotRun, Detail: "interrupted"})
				continue
			}
			r := env.replay(ctx, b)
			if o.Scripts && ctx.Err() == nil {
				r.Script = env.script(ctx, b)
			}
			report(r)
		}
		env.close()
	}
	return out
}

// environment is one target's operator on an embedded cluster.
type environment struct {
	cluster    cluster.Cluster
	deployment *campaign.Deployment
	cs         kubernetes.Interface
	log        *slog.Logger
}

// setUp brings up an embedded cluster with the target's operator deployed.
func setUp(ctx context.Context, spec string, o Options) (*environment, error) {
	path := spec
	if !filepath.IsAbs(path) {
		path = filepath.Join(o.Repo, spec)
	}
	t, err := targets.Resolve(path, o.Repo)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", spec, err)
	}
	if err := built(t); err != nil {
		return nil, fmt.Errorf("target %s: %w", spec, err)
	}
	prov, err := backends.Open(ctx, backends.Local, backends.Options{StateRoot: o.StateRoot, MappingRules: t.ImageMapping, Nodes: 1, Log: o.Log,
		OperatorBinary: filepath.Join(o.Repo, "bin", "valkey-operator")})
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("gf-%x", time.Now().UnixNano()&0xffffffff)
	c, err := prov.Create(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("the embedded cluster did not come up: %w", err)
	}
	d, err := campaign.Deploy(ctx, c, t, o.Log)
	if err != nil {
		_ = c.Delete(context.WithoutCancel(ctx))
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		d.Stop()
		_ = c.Delete(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("client for cluster %s: %w", name, err)
	}
	return &environment{cluster: c, deployment: d, cs: cs, log: o.Log}, nil
}

func (e *environment) close() {
	e.deployment.Stop()
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.cluster.Delete(dctx); err != nil {
		e.log.Warn("delete the embedded cluster", "cluster", e.cluster.Name(), "err", err)
	}
}

// built reports the target's mapped programs that are not built or installed.
func built(t *targets.Target) error {
	var missing []string
	for _, r := range t.ImageMapping {
		for prog, cands := range r.Programs {
			found := false
			for _, c := range cands {
				p, err := imagemap.ExpandEnv(c)
				if err != nil {
					continue
				}
				if !strings.Contains(p, "/") {
					_, err = exec.LookPath(p)
				} else {
					_, err = os.Stat(p)
				}
				if err == nil {
					found = true
					break
				}
			}
			if !found {
				how := r.Install
				if how == "" {
					how = "install it"
				}
				missing = append(missing, fmt.Sprintf("%s (%s)", prog, how))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not built: %s", strings.Join(missing, "; "))
	}
	return nil
}

// replay runs one bundle in a namespace of its own and judges the outcome.
func (e *environment) replay(ctx context.Context, b *Bundle) (res Result) {
	start := time.Now()
	res.Bundle = b.Name
	ns := "finding-" + strings.ReplaceAll(filepath.Base(b.Dir), "_", "-")
	defer func() {
		res.Duration = time.Since(start)
		e.deleteNamespace(ctx, ns)
	}()
	out, err := e.deployment.Replay(ctx, b.Reproducer, campaign.ReplayOptions{Namespace: ns, Judge: true,
		Converge: campaign.ConvergeOptions{Timeout: b.Reproducer.ConvergeTimeout}})
	if err != nil {
		res.Status, res.Detail = CouldNotRun, err.Error()
		return res
	}
	for i, st := range out.Steps {
		if i == 0 {
			continue // the seed's findings are not the sequence's
		}
		for _, f := range st.Findings {
			e.log.Info("finding", "bundle", b.Name, "step", st.Index, "signature", f.Signature, "summary", f.Summary)
		}
	}
	res.Status, res.Detail = Judge(b.Meta.Expect, out.Steps)
	return res
}

// scriptTimeout bounds one run of a reproduce.sh (each waits at most a few
// minutes per step).
const scriptTimeout = 20 * time.Minute

// script runs the bundle's reproduce.sh against the cluster: exit 0 is
// Reproduces, 1 NoLongerReproduces, anything else CouldNotRun.
func (e *environment) script(ctx context.Context, b *Bundle) *ScriptResult {
	start := time.Now()
	ns := "finding-" + filepath.Base(b.Dir) + "-sh"
	sctx, cancel := context.WithTimeout(ctx, scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, "bash", filepath.Join(b.Dir, ScriptFile))
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.cluster.Kubeconfig(), "NAMESPACE="+ns)
	out, err := cmd.CombinedOutput()
	e.deleteNamespace(ctx, ns)
	res := &ScriptResult{Duration: time.Since(start), Detail: verdictLine(string(out))}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.Status = Reproduces
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		res.Status = NoLongerReproduces
	case sctx.Err() != nil:
		res.Status, res.Detail = CouldNotRun, fmt.Sprintf("did not finish within %s: %s", scriptTimeout, res.Detail)
	default:
		res.Status = CouldNotRun
	}
	return res
}

// verdictLine is the REPRODUCED/NOT REPRODUCED/error line of a script's
// output, else its last line.
func verdictLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "REPRODUCED") || strings.HasPrefix(l, "NOT REPRODUCED") || strings.HasPrefix(l, "error:") {
			return l
		}
	}
	return lines[len(lines)-1]
}

// Judge says whether the step records of a replay (the seed's first) show
// the expected alarm again after the seed.
func Judge(want Expect, steps []*campaign.StepRecord) (Status, string) {
	if len(steps) == 0 {
		return CouldNotRun, "the replay recorded no step"
	}
	seed := steps[0]
	if seed.Unconverged() {
		return CouldNotRun, "the seed did not converge: " + strings.Join(seed.NotReady, "; ")
	}
	for _, f := range seed.Findings {
		if f.Oracle == "apply" {
			return CouldNotRun, "the API server refused the seed: " + evidenceText(f)
		}
	}
	var other []string
	for _, s := range steps[1:] {
		for _, f := range s.Findings {
			if f.Signature == want.Signature && (want.Contains == "" || strings.Contains(f.Summary+"\n"+evidenceText(f), want.Contains)) {
				return Reproduces, f.Summary
			}
			other = append(other, f.Signature+": "+f.Summary)
		}
	}
	if len(steps) < 2 {
		return CouldNotRun, "the replay stopped after the seed"
	}
	if len(other) == 0 {
		return NoLongerReproduces, "no alarm"
	}
	return NoLongerReproduces, fmt.Sprintf("%d other findings, first: %s", len(other), other[0])
}

func evidenceText(f model.Finding) string {
	var parts []string
	for _, ev := range f.Evidence {
		s := strings.TrimSpace(strings.Join([]string{ev.Object, ev.Path, ev.Detail, fmt.Sprint(ev.Actual)}, " "))
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// deleteNamespace deletes ns and waits up to two minutes for it to go, so
// the next bundle starts with the operator idle.
func (e *environment) deleteNamespace(ctx context.Context, ns string) {
	ctx = context.WithoutCancel(ctx)
	if err := e.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		e.log.Warn("delete the bundle's namespace", "namespace", ns, "err", err)
		return
	}
	err := wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		e.log.Warn("wait for the bundle's namespace to go", "namespace", ns, "err", err)
	}
}
