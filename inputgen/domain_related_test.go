package inputgen

import (
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// An image mined for the main container is not offered to a sidecar whose
// default names another program (the bundled operator's exporter was given a
// Valkey image and ran a Valkey server); images of the sidecar's own
// repository, and every image for a property without a default, are.
func TestSameProgram(t *testing.T) {
	mined := []any{"valkey/valkey:8.1", "docker.io/oliver006/redis_exporter:v1.66.0", "oliver006/redis_exporter:v1.68.0"}
	exporter := &crd.Property{Default: "oliver006/redis_exporter:v1.67.0", HasDefault: true}
	got := sameProgram(exporter, mined)
	if len(got) != 2 || got[0] != mined[1] || got[1] != mined[2] {
		t.Errorf("sidecar with a default: got %v, want the two redis_exporter images", got)
	}
	if got := sameProgram(&crd.Property{}, mined); len(got) != len(mined) {
		t.Errorf("no default: got %v, want every image", got)
	}
}
