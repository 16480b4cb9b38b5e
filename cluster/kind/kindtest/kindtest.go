// Package kindtest holds what end-to-end tests of other packages need to run on kind: the
// kind lane's check. (cluster/kind's and its node image's own tests cannot import it: it
// imports them.)
package kindtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/kind"
	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

// NeedLane skips tb (the kind lane's allowed skip) unless kind can run here: a container
// engine answers and the offline node image is built or can be (it is built when stale).
// With chaosMesh it also needs Chaos Mesh's build (make chaosmesh, which make test runs
// where an engine answers): its absence is an environment failure, not a skip.
func NeedLane(tb testing.TB, chaosMesh bool) {
	tb.Helper()
	ctx := context.Background()
	if err := kind.Available(ctx); err != nil {
		if !errors.Is(err, kind.ErrNoEngine) {
			tb.Fatalf("kind.Available returned %v, which is not kind.ErrNoEngine", err)
		}
		testenv.Skip(tb, testenv.Kind, "no container engine on this machine, kind cannot run: %v", err)
	}
	testenv.NeedRoot(tb)
	if _, err := nodeimage.Build(ctx, nodeimage.Options{}); err != nil {
		if strings.Contains(err.Error(), "is missing: run `make") || strings.Contains(err.Error(), "no CoreDNS build") {
			testenv.Skip(tb, testenv.Kind, "the offline node image cannot be built, its inputs are not (make kind-binaries controlplane kind-coredns): %v", err)
		}
		tb.Fatalf("node image: %v", err)
	}
	if chaosMesh {
		if _, err := os.Stat(filepath.Join(kind.DefaultChaosMeshDir(), "chaos-mesh.yaml")); err != nil {
			testenv.Unavailable(tb, "%v (%v)", kind.ErrNoChaosMesh, err)
		}
	}
}
