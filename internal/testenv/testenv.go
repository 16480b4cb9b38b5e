// Package testenv decides what a test does when its environment is missing
// something: skip on a developer's machine, fail in CI.
//
// An end-to-end test that cannot run (no root, no control plane, a cluster that
// did not come up) must not turn into a green SKIP where the suite is meant to
// prove something. In CI (CI=true) or with GAUNTLET_REQUIRE_E2E=1, Unavailable
// fails the test with the reason; elsewhere it skips. The few skips that are
// legitimate even in CI (a lane this machine cannot run, an opt-in benchmark)
// go through Skip with a named Lane, and .ci/allowed-skips lists them by test
// name: `make test` fails in CI on any skip that list does not name.
package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// Lane names a reason a test may skip even in CI.
type Lane string

// The lanes a test may skip for in CI.
const (
	// Short is a test skipped under `go test -short` (CI never passes -short).
	Short Lane = "short"
	// Kind is the kind/Docker lane while no container engine runs here.
	Kind Lane = "kind"
	// LLMLive is a test that calls a live LLM endpoint (only when one is configured).
	LLMLive Lane = "llm-live"
	// OptIn is a long benchmark run only when asked for (e.g. `make bench-bugs`).
	OptIn Lane = "opt-in"
	// Helper is a test function that is the entry point of a child process another test starts.
	Helper Lane = "helper"
)

// Required reports whether environment problems must fail tests: CI=true (or
// 1), or GAUNTLET_REQUIRE_E2E=1.
func Required() bool {
	for _, name := range []string{"CI", "GAUNTLET_REQUIRE_E2E"} {
		if v, err := strconv.ParseBool(os.Getenv(name)); err == nil && v {
			return true
		}
	}
	return false
}

// Unavailable reports that the environment lacks something the test needs: it
// fails the test in CI (see Required) and skips it elsewhere.
func Unavailable(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		tb.Fatalf("environment problem (CI and GAUNTLET_REQUIRE_E2E=1 fail instead of skipping): %s", msg)
	}
	tb.Skip(msg)
}

// Skip skips the test for a named lane; the message says which. In CI the test
// must also be listed in .ci/allowed-skips or the run fails.
func Skip(tb testing.TB, lane Lane, format string, args ...any) {
	tb.Helper()
	tb.Skipf("[%s] %s", lane, fmt.Sprintf(format, args...))
}

// SkipShort skips the test under -short (end-to-end tests and others that start
// real processes).
func SkipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		Skip(tb, Short, "starts real components; skipped in -short mode")
	}
}

// NeedRoot requires root (pods get network and mount namespaces).
func NeedRoot(tb testing.TB) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Unavailable(tb, "this test needs root (the embedded cluster uses network and mount namespaces): run it as root")
	}
}

// NeedE2E is the common start of an end-to-end test: not in -short mode, root,
// and the control-plane binaries present in binDir (or where
// GAUNTLET_CONTROLPLANE_BIN points).
func NeedE2E(tb testing.TB, binDir string) {
	tb.Helper()
	SkipShort(tb)
	NeedRoot(tb)
	if d := os.Getenv("GAUNTLET_CONTROLPLANE_BIN"); d != "" {
		binDir = d
	}
	if _, err := os.Stat(filepath.Join(binDir, "kube-apiserver")); err != nil {
		Unavailable(tb, "control plane not built (run `make controlplane`): %v", err)
	}
}

// NeedFile requires a file (a built binary, a tool) and says how to get it.
func NeedFile(tb testing.TB, path, how string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		Unavailable(tb, "%s is missing (%s): %v", path, how, err)
	}
}
