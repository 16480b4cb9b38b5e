package inputgen

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/inputgen/crd"
)

// TestRunGenSeedVersion: a seed in a served, non-storage version is generated for in its own
// version without flags; a seed in a version the CRD does not serve, or another than --version,
// is refused with an error naming the versions.
func TestRunGenSeedVersion(t *testing.T) {
	clearLLMEnv(t)
	crdFile := testdataPath("versions.crd.yaml")
	out := t.TempDir()
	var stdout bytes.Buffer
	if err := RunGen(context.Background(), GenOptions{CRDPath: crdFile, SeedPath: testdataPath("versions.seed.yaml"), OutDir: out, Seed: 1}, &stdout); err != nil {
		t.Fatalf("seed in served version v1beta1: %v", err)
	}
	plan, err := ReadPlanFile(filepath.Join(out, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Version != "v1beta1" {
		t.Errorf("plan version %q, want the seed's v1beta1", plan.Version)
	}
	if !strings.Contains(stdout.String(), "test.gauntlet.dev/v1beta1") {
		t.Errorf("summary does not name the seed's version:\n%s", stdout.String())
	}
	var paths []string
	for _, pc := range plan.Properties {
		paths = append(paths, pc.Path)
	}
	if got := strings.Join(paths, " "); !strings.Contains(got, "spec.mode") || strings.Contains(got, "spec.replicas") {
		t.Errorf("properties %s: want v1beta1's (spec.mode), not v1's (spec.replicas)", got)
	}

	tests := []struct {
		name    string
		seed    string
		version string
		err     error
		mention []string
	}{
		{"unserved version", "apiVersion: test.gauntlet.dev/v1alpha1\nkind: Cache\nmetadata: {name: c}\nspec: {}\n", "",
			crd.ErrVersionNotServed, []string{"v1alpha1", "served: v1, v1beta1"}},
		{"undeclared version", "apiVersion: test.gauntlet.dev/v3\nkind: Cache\nmetadata: {name: c}\nspec: {}\n", "",
			crd.ErrVersionNotFound, []string{`"v3"`, "served: v1, v1beta1"}},
		{"explicit version differs", "apiVersion: test.gauntlet.dev/v1beta1\nkind: Cache\nmetadata: {name: c}\nspec: {size: 1}\n", "v1",
			crd.ErrVersionMismatch, []string{"v1beta1", "drop the version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := RunGen(context.Background(), GenOptions{CRDPath: crdFile, SeedPath: writeTemp(t, "s.yaml", tt.seed), Version: tt.version, OutDir: t.TempDir()}, &bytes.Buffer{})
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not mention %q: %v", m, err)
				}
			}
		})
	}
	// The explicit version that is the seed's own works.
	if err := RunGen(context.Background(), GenOptions{CRDPath: crdFile, SeedPath: testdataPath("versions.seed.yaml"), Version: "v1beta1", OutDir: t.TempDir()}, &bytes.Buffer{}); err != nil {
		t.Errorf("--version v1beta1 with a v1beta1 seed: %v", err)
	}
}

// TestRunGenSeedUnknownField: a seed field the schema does not declare is an error naming it;
// with Lenient it is dropped with a warning in the plan and the summary.
func TestRunGenSeedUnknownField(t *testing.T) {
	clearLLMEnv(t)
	seed := writeTemp(t, "s.yaml", `apiVersion: test.gauntlet.dev/v1
kind: Cache
metadata: {name: c, labelz: {app: x}}
spec:
  replicas: 2
  replica: 3
  storage: {size: 1Gi, class: fast}
`)
	opts := GenOptions{CRDPath: testdataPath("versions.crd.yaml"), SeedPath: seed, OutDir: t.TempDir()}
	err := RunGen(context.Background(), opts, &bytes.Buffer{})
	if !errors.Is(err, ErrSeedUnknownField) {
		t.Fatalf("err = %v, want %v", err, ErrSeedUnknownField)
	}
	for _, m := range []string{"metadata.labelz", "spec.replica", "spec.storage.class", "--lenient"} {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error does not mention %q: %v", m, err)
		}
	}
	opts.Lenient = true
	var stdout bytes.Buffer
	if err := RunGen(context.Background(), opts, &stdout); err != nil {
		t.Fatalf("lenient: %v", err)
	}
	plan, err := ReadPlanFile(filepath.Join(opts.OutDir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan.SeedWarnings, "\n"); !strings.Contains(got, "spec.replica:") || !strings.Contains(got, "spec.storage.class:") {
		t.Errorf("seed warnings %q: want both unknown fields", plan.SeedWarnings)
	}
	if _, ok := plan.Base["spec"].(map[string]any)["replica"]; ok {
		t.Error("the unknown field stayed in the plan's base")
	}
	if !strings.Contains(stdout.String(), "seed warning") || !strings.Contains(stdout.String(), "spec.storage.class") {
		t.Errorf("summary lacks the warnings:\n%s", stdout.String())
	}
}

// TestSeedSense: values the schema allows but scenarios cannot use meaningfully are reported.
func TestSeedSense(t *testing.T) {
	crds, err := crd.LoadFile(testdataPath("versions.crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := crd.NewSchema(crds[0], "v1")
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGenerator(s, map[string]any{
		"apiVersion": "test.gauntlet.dev/v1", "kind": "Cache", "metadata": map[string]any{"name": "c"},
		"spec": map[string]any{"replicas": int64(-1), "port": int64(70000), "storage": map[string]any{"size": "-1Gi"}},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := g.Plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(plan.SeedWarnings, "\n")
	for _, want := range []string{"spec.replicas: -1 is a negative count", "spec.port: 70000 is not a TCP port", `spec.storage.size: "-1Gi" is a negative quantity`} {
		if !strings.Contains(got, want) {
			t.Errorf("seed warnings lack %q:\n%s", want, got)
		}
	}
	// A sensible seed has none.
	g, err = NewGenerator(s, map[string]any{
		"apiVersion": "test.gauntlet.dev/v1", "kind": "Cache", "metadata": map[string]any{"name": "c"},
		"spec": map[string]any{"replicas": int64(3), "port": int64(6379), "storage": map[string]any{"size": "1Gi"}},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.seedWarnings) != 0 {
		t.Errorf("sensible seed reported: %q", g.seedWarnings)
	}
}

// TestRealSeedUnknownFields pins the shared example seeds that set fields their CRD does not
// declare: generation refuses them unless lenient, naming the fields.
func TestRealSeedUnknownFields(t *testing.T) {
	want := map[string]string{
		"cockroachdb/CrdbCluster":   "spec.topology",
		"ot-redis/Redis":            "spec.securityContext.fsGroup",
		"ot-redis/RedisReplication": "spec.securityContext.fsGroup",
	}
	for _, rc := range realCases(t) {
		if got := strings.Join(rc.unknown, ", "); got != want[rc.name] {
			t.Errorf("%s: unknown seed fields %q, want %q", rc.name, got, want[rc.name])
		}
	}
}
