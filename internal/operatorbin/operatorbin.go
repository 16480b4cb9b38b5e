// Package operatorbin finds the bundled Valkey operator's binary the one way the
// commands and tests do: $GAUNTLET_OPERATOR_BINARY, else bin/valkey-operator in
// the Gauntlet repository (where `make build` puts it), and builds one when a
// test needs it from the source.
package operatorbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Env is the variable that points at an operator build.
const Env = "GAUNTLET_OPERATOR_BINARY"

// Path returns $GAUNTLET_OPERATOR_BINARY, else REPO/bin/valkey-operator, else ""
// (neither the variable nor a repository).
func Path(repo string) string {
	if p := os.Getenv(Env); p != "" {
		return p
	}
	if repo == "" {
		return ""
	}
	return filepath.Join(repo, "bin", "valkey-operator")
}

// Find returns Path(repo) when that file exists, or an error naming it and the fix.
func Find(repo string) (string, error) {
	p := Path(repo)
	if p == "" {
		return "", fmt.Errorf("no operator binary: set %s or run from the Gauntlet repository after `make build`", Env)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("operator binary not built (run `make build`, or set %s to your build): %w", Env, err)
	}
	return p, nil
}

// Build compiles ./cmd/valkey-operator of the repository at repo into
// dir/valkey-operator and returns its path.
func Build(ctx context.Context, repo, dir string) (string, error) {
	out := filepath.Join(dir, "valkey-operator")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/valkey-operator")
	cmd.Dir = repo
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the operator in %s: %w: %s", repo, err, b)
	}
	return out, nil
}
