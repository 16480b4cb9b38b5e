package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/backends"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// The embedded cluster's pod containers run under a shim that is this binary
// re-executed (cluster/local): when the process is one, Init runs the
// container and never returns. It must run before the tests, and a generated
// test file has no TestMain of its own.
func init() { backends.Init() }

// environment is where a reproducer replays: a KUBECONFIG cluster, or an
// embedded cluster with the target deployed.
type environment struct {
	config     *rest.Config
	embedded   bool
	deployment *campaign.Deployment // nil on a KUBECONFIG cluster
}

// fixtures creates the target's fixtures in ns on an embedded cluster (on a
// KUBECONFIG cluster, whoever deployed the operator provides them).
func (e environment) fixtures(ctx context.Context, ns string) error {
	if e.deployment == nil {
		return nil
	}
	return e.deployment.ApplyFixtures(ctx, ns)
}

// logOperator logs the tail of what the deployed operator logged since `since`.
func (e environment) logOperator(ctx context.Context, tb testing.TB, since time.Time) {
	tb.Helper()
	if e.deployment == nil {
		return
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if log := tail(e.deployment.OperatorLog(lctx, since), 60); log != "" {
		tb.Logf("testkit: the operator's log (last lines):\n%s", log)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// setUp returns the cluster to replay on: the KUBECONFIG one, or a fresh
// embedded cluster with the target's operator deployed (deleted by
// tb.Cleanup). It skips (fails in CI) where the embedded cluster cannot run.
func setUp(ctx context.Context, tb testing.TB, r Reproducer, o options) environment {
	tb.Helper()
	if o.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			tb.Fatalf("testkit: load the kubeconfig %s: %v", o.kubeconfig, err)
		}
		return environment{config: cfg}
	}
	testenv.NeedE2E(tb, backends.ControlPlaneBinDir())
	spec := o.target
	if spec == "" {
		spec = r.Target
	}
	if spec == "" {
		testenv.Unavailable(tb, "KUBECONFIG is not set and the reproducer names no target to deploy on an embedded cluster: set GAUNTLET_TARGET (a built-in target or a target file) or point KUBECONFIG at a cluster where the operator runs")
	}
	repo := o.repo
	if repo == "" {
		repo = findRepo()
	}
	builtin := isBuiltin(spec)
	if builtin && repo == "" {
		testenv.Unavailable(tb, "the built-in target %s lives in the Gauntlet repository, which was not found: set GAUNTLET_REPO (or WithRepo) to its folder", spec)
	}
	t, err := targets.Resolve(spec, repo)
	if err != nil {
		tb.Fatalf("testkit: target %s: %v", spec, err)
	}
	bin := o.operatorBin
	if bin == "" {
		bin = operatorbin.Path(repo)
	}
	if builtin || o.operatorBin != "" {
		if _, err := os.Stat(bin); err != nil {
			testenv.Unavailable(tb, "the operator binary %s is missing (build it with `make build` in the Gauntlet repository, or set GAUNTLET_OPERATOR_BINARY to your build): %v", bin, err)
		}
	}
	prov, err := backends.Open(ctx, backends.Local, backends.Options{StateRoot: o.stateRoot, OperatorBinary: bin, MappingFile: o.imageMapping,
		MappingRules: t.ImageMapping, Nodes: o.nodes, Log: o.log})
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	name := clusterName()
	cctx, cancel := context.WithTimeout(ctx, setupBudget)
	defer cancel()
	t0 := time.Now()
	c, err := prov.Create(cctx, name)
	if err != nil {
		if errors.Is(err, cluster.ErrUnavailable) {
			testenv.Unavailable(tb, "%v", err)
		}
		testenv.Unavailable(tb, "the embedded cluster %s did not come up: %v", name, err)
	}
	tb.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Delete(dctx); err != nil {
			tb.Errorf("testkit: delete the embedded cluster %s: %v", name, err)
		}
	})
	t1 := time.Now()
	d, err := campaign.Deploy(cctx, c, t, o.log)
	if err != nil {
		tb.Fatalf("testkit: %v", err)
	}
	tb.Cleanup(d.Stop)
	tb.Logf("testkit: embedded cluster %s up in %v, target %s deployed in %v (operator binary %s)",
		name, t1.Sub(t0).Round(100*time.Millisecond), t.Name, time.Since(t1).Round(100*time.Millisecond), bin)
	return environment{config: c.RESTConfig(), embedded: true, deployment: d}
}

// isBuiltin reports whether spec names a built-in target.
func isBuiltin(spec string) bool {
	name := strings.TrimPrefix(spec, "builtin:")
	for _, b := range targets.BuiltinNames {
		if name == b {
			return true
		}
	}
	return false
}

// findRepo finds the Gauntlet repository: above the working directory (a
// test inside it), else the folder this package was compiled from (a module
// replaced by a local checkout, or the module cache); "" when neither is one.
func findRepo() string {
	if r, err := targets.FindRepoRoot("."); err == nil {
		return r
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if r, err := targets.FindRepoRoot(filepath.Dir(file)); err == nil {
			return r
		}
	}
	return ""
}

// clusterName is a fresh embedded cluster name ("gt-" and 8 hex digits).
func clusterName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "gt-" + hex.EncodeToString(b[:])
}
