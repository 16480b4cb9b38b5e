package campaign

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestShippedTargetsOracleConfigValid: the oracle configuration Run validates
// (and refuses when invalid) is valid for every target the repository ships.
func TestShippedTargetsOracleConfigValid(t *testing.T) {
	root, err := targets.FindRepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	// The examples under targets/examples need built prerequisites; the test
	// targets stand in for target files and Acto configs.
	specs := []string{"valkey",
		filepath.Join(root, "targets", "testdata", "file", "widget.yaml"),
		filepath.Join(root, "targets", "testdata", "acto", "data", "widget-operator", "config.json")}
	n := 0
	for _, s := range specs {
		tg, err := targets.Resolve(s, root)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		n++
		if err := OracleConfig(tg).Validate(); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if n < 3 {
		t.Errorf("checked %d targets, want the built-in one and the examples", n)
	}
}

// TestUnmatchedProperties: a property restriction entry that names nothing in
// the plan is reported (it would silently select no test case).
func TestUnmatchedProperties(t *testing.T) {
	p := &inputgen.Plan{Properties: []inputgen.PropertyCoverage{{Path: "spec.replicas"}, {Path: "spec.config.maxmemory"}}}
	tg := &targets.Target{Properties: []string{"spec.replicas", "spec.config", "spec.replica", "spec.shards"}}
	if got := unmatchedProperties(tg, p); !slices.Equal(got, []string{"spec.replica", "spec.shards"}) {
		t.Errorf("unmatched = %v, want [spec.replica spec.shards]", got)
	}
}
