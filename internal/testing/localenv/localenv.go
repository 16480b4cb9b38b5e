// Package localenv is the common start of an end-to-end test on the embedded
// cluster (cluster/local): skip unless the cluster can run here, find the
// Gauntlet repository and the bundled operator's build. It is test support.
package localenv

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/local"
	"github.com/gauntlet-dev/gauntlet/internal/operatorbin"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// Repo skips the test unless the embedded cluster can run here (not -short,
// root, the control plane built: testenv.NeedE2E) and returns the root of the
// Gauntlet repository the test runs in.
func Repo(tb testing.TB) string {
	tb.Helper()
	testenv.NeedE2E(tb, local.ControlPlaneBinDir())
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

// Operator returns the bundled operator's binary (operatorbin.Find: the
// variable, else repo's bin/valkey-operator), or marks the test unavailable
// saying how to build it.
func Operator(tb testing.TB, repo string) string {
	tb.Helper()
	bin, err := operatorbin.Find(repo)
	if err != nil {
		testenv.Unavailable(tb, "%v", err)
	}
	return bin
}
