package buildcache

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestBinaryBuiltOncePerRun(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	var builds atomic.Int32
	build := func(out string) error {
		builds.Add(1)
		return os.WriteFile(out, []byte("binary"), 0o755)
	}
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Go(func() {
			var err error
			if paths[i], err = cached(os.Getenv(EnvDir), "op", []byte("same inputs"), build); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := builds.Load(); n != 1 {
		t.Errorf("built %d times for one key, want once", n)
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Errorf("paths differ: %s, %s", p, paths[0])
		}
	}
	if b, err := os.ReadFile(paths[0]); err != nil || string(b) != "binary" {
		t.Errorf("cached binary: %q, %v", b, err)
	}
	if other := Binary(t, "op", []byte("other inputs"), build); other == paths[0] || builds.Load() != 2 {
		t.Errorf("other inputs: path %s (first %s), %d builds; want a second build elsewhere", other, paths[0], builds.Load())
	}
}

func TestFailedBuildNotKept(t *testing.T) {
	dir := t.TempDir()
	if _, err := cached(dir, "op", []byte("k"), func(string) error { return errors.New("compile error") }); err == nil {
		t.Fatal("a failed build returned no error")
	}
	p, err := cached(dir, "op", []byte("k"), func(out string) error { return os.WriteFile(out, nil, 0o755) })
	if err != nil {
		t.Fatalf("the build after a failure: %v", err)
	}
	if filepath.Dir(filepath.Dir(p)) != dir {
		t.Errorf("binary %s outside the cache %s", p, dir)
	}
}

func TestBinaryWithoutCacheBuildsEachTime(t *testing.T) {
	t.Setenv(EnvDir, "")
	var builds int
	build := func(out string) error { builds++; return os.WriteFile(out, nil, 0o755) }
	a, b := Binary(t, "op", []byte("k"), build), Binary(t, "op", []byte("k"), build)
	if builds != 2 || a == b {
		t.Errorf("without %s: %d builds, paths %s and %s; want two builds in two folders", EnvDir, builds, a, b)
	}
}
