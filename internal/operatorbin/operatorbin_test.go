package operatorbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	repo := t.TempDir()
	t.Setenv(Env, "")
	if got := Path(""); got != "" {
		t.Errorf("Path with no variable and no repository = %q, want empty", got)
	}
	want := filepath.Join(repo, "bin", "valkey-operator")
	if _, err := Find(repo); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("Find of a repository without a build: err = %v, want one saying to run make build", err)
	}
	if err := os.MkdirAll(filepath.Dir(want), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(repo); err != nil || got != want {
		t.Errorf("Find = %q, %v; want %q", got, err, want)
	}
	t.Setenv(Env, "/elsewhere/operator")
	if got := Path(repo); got != "/elsewhere/operator" {
		t.Errorf("Path with %s set = %q, want the variable's value", Env, got)
	}
}
