package testcrds

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirAbsent(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(repo, "pkg"))
	if _, err := Dir(); !errors.Is(err, ErrAbsent) {
		t.Errorf("Dir() err = %v, want ErrAbsent", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "shared", "crds", "op", "crds"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "shared", "crds", "op", "crds", "a.yaml"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ops, err := Operators()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 || ops[0].Name != "op" || len(ops[0].CRDs) != 1 || len(ops[0].Examples) != 0 {
		t.Errorf("Operators() = %+v", ops)
	}
}

func TestCRD(t *testing.T) {
	got := CRD("Lock", `
      type: object
      properties:
        spec: {type: object}
`)
	want := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: locks.test.gauntlet.dev}
spec:
  group: test.gauntlet.dev
  names: {kind: Lock, plural: locks}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object}
`
	if got != want {
		t.Errorf("CRD with a schema =\n%s\nwant\n%s", got, want)
	}
	if got, want := CRD("Lock", " \n"), strings.TrimSuffix(want, "    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object}\n"); got != want {
		t.Errorf("CRD without a schema =\n%s\nwant\n%s", got, want)
	}
}
