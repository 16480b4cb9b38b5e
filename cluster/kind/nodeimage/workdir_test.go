package nodeimage

import (
	"os"
	"testing"
)

// Two builds of one process (tests run side by side) get folders of their
// own: a second build must not remove the first one's files.
func TestWorkDirPerBuild(t *testing.T) {
	cache := t.TempDir()
	a, err := workDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(a+"/pause", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := workDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if a == b {
		t.Fatalf("both builds got %s", a)
	}
	if _, err := os.Stat(a + "/pause"); err != nil {
		t.Fatalf("the second build removed the first one's files: %v", err)
	}
}
