package kubelet

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReachableByAll: a program in a folder only its owner may enter (a build
// cache under a 0700 home) is not reachable by a container of another uid, so
// the kubelet binds it in; one in open folders is run where it lies.
func TestReachableByAll(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the test's own temporary folders
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	open := filepath.Join(dir, "open", "prog")
	closed := filepath.Join(dir, "closed", "sub", "prog")
	for _, p := range []string{open, closed} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "closed"), 0o700); err != nil {
		t.Fatal(err)
	}
	if !reachableByAll(open) {
		t.Errorf("%s: want reachable", open)
	}
	if reachableByAll(closed) {
		t.Errorf("%s: want unreachable (a folder above it is 0700)", closed)
	}
}
