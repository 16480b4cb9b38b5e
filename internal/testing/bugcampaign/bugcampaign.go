// Package bugcampaign runs, for end-to-end tests, the seeded-bug benchmark's campaign of one
// bug (bench/bugs: its test cases, faults and example resources) against the bundled operator
// built with the bug's patch or without it. The builds are shared by the tests of one run
// (internal/testing/buildcache). It is test support.
package bugcampaign

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gauntlet-dev/gauntlet/bench/bugs"
	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"
	"github.com/gauntlet-dev/gauntlet/internal/testing/buildcache"
	"github.com/gauntlet-dev/gauntlet/internal/testing/localenv"
)

// Find returns the seeded bug name of the repository at root.
func Find(t testing.TB, root, name string) bugs.Bug {
	t.Helper()
	bs, err := bugs.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.Name == name {
			return b
		}
	}
	t.Fatalf("seeded bug %s not found", name)
	return bugs.Bug{}
}

// Operator returns the bundled operator built with the patch (a file; "" for the clean
// operator), built once per test run. The clean operator is $GAUNTLET_OPERATOR_BINARY when
// set, as for the other end-to-end tests (`make build` builds it the same way before `make
// test` runs the tests), so that no test waits for a second build of it.
func Operator(ctx context.Context, t testing.TB, root, patch string) string {
	t.Helper()
	if patch == "" && os.Getenv(operatorbin.Env) != "" {
		return localenv.Operator(t, root)
	}
	return buildcache.Operator(t, patch, func(out string) error { return bugs.BuildOperator(ctx, root, patch, out) })
}

// Run runs the benchmark's campaign of the seeded bug name (its first n test cases, its
// faults and example CRs) against the operator built with the bug's patch, or, when patched
// is false, against the clean operator. backend, when given, changes the campaign's
// configuration (its cluster provider) for the operator binary it is given. It returns the
// configuration, the result and the results folder.
func Run(ctx context.Context, t *testing.T, name string, patched, minimize bool, n int, backend ...func(*campaign.Config, string)) (campaign.Config, *campaign.Result, string) {
	t.Helper()
	root := localenv.Repo(t)
	bug := Find(t, root, name)
	dir := t.TempDir()
	if d := os.Getenv("GAUNTLET_E2E_KEEP"); d != "" {
		dir = d
	}
	patch := bug.Patch
	if !patched {
		patch = ""
		dir = filepath.Join(dir, "clean") // apart from the patched run's (GAUNTLET_E2E_KEEP)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := Operator(ctx, t, root, patch)
	out := filepath.Join(dir, "results")
	cfg, err := bugs.Config(root, filepath.Join(dir, "state"), out, bin, bug.Cases[:n], 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	bug.Apply(&cfg)
	for _, b := range backend {
		b(&cfg, bin)
	}
	cfg.NoMinimize = !minimize
	res, err := campaign.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Steps {
		for _, f := range s.Faults {
			t.Logf("%s: %s on %v, unsupported %q; availability %+v; converged after %v", s.ID(), f.Kind, f.Targets, f.Unsupported, s.Availability, s.ConvergeTime())
		}
	}
	return cfg, res, out
}

// RequireAlarm returns the first bug alarm group raised by one of the oracles, and fails t
// when there is none.
func RequireAlarm(t *testing.T, res *campaign.Result, oracles ...string) *campaign.AlarmGroup {
	t.Helper()
	var hit *campaign.AlarmGroup
	for _, g := range res.Groups {
		t.Logf("alarm: %s %s: %s (steps %v, misoperation %v)", g.Oracle, g.Signature, g.Summary, g.Steps, g.Misoperation)
		if slices.Contains(oracles, g.Oracle) && !g.Misoperation && hit == nil {
			hit = g
		}
	}
	if hit == nil {
		t.Fatalf("the seeded bug raised no %v alarm (%d groups)", oracles, len(res.Groups))
	}
	return hit
}
