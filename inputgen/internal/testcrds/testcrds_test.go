package testcrds

import (
	"errors"
	"os"
	"path/filepath"
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
