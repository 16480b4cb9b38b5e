package hoststate

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestStateRootResolution(t *testing.T) {
	t.Setenv(EnvStateDir, "")
	if got := StateRoot(""); got != DefaultStateRoot {
		t.Errorf("StateRoot(\"\") = %q, want %q", got, DefaultStateRoot)
	}
	t.Setenv(EnvStateDir, "/tmp/elsewhere")
	if got := StateRoot(""); got != "/tmp/elsewhere" {
		t.Errorf("StateRoot with $%s = %q", EnvStateDir, got)
	}
	if got := StateRoot("/given"); got != "/given" {
		t.Errorf("StateRoot(/given) = %q", got)
	}
}

func TestCacheDirResolution(t *testing.T) {
	t.Setenv(EnvCacheDir, "/tmp/cache")
	if got := CacheDir(); got != "/tmp/cache" {
		t.Errorf("CacheDir with $%s = %q", EnvCacheDir, got)
	}
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/xdg")
	if got := CacheDir(); got != "/tmp/xdg/gauntlet" {
		t.Errorf("CacheDir with $XDG_CACHE_HOME = %q", got)
	}
}

func TestOwnerRecord(t *testing.T) {
	dir := t.TempDir()
	if OwnerAlive(dir) {
		t.Fatal("OwnerAlive without a record = true")
	}
	if err := RecordOwner(dir); err != nil {
		t.Fatal(err)
	}
	if !OwnerAlive(dir) {
		t.Fatal("OwnerAlive after RecordOwner (this process) = false")
	}
	if _, err := os.Stat(OwnerRecord(dir)); err != nil {
		t.Fatal(err)
	}
}

// TestLockExcludes: goroutines of one process never hold the lock together, and
// the lock file's missing folder is made.
func TestLockExcludes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "lock")
	var inside, max atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				unlock, err := Lock(path)
				if err != nil {
					t.Error(err)
					return
				}
				n := inside.Add(1)
				for {
					m := max.Load()
					if n <= m || max.CompareAndSwap(m, n) {
						break
					}
				}
				inside.Add(-1)
				unlock()
			}
		})
	}
	wg.Wait()
	if max.Load() != 1 {
		t.Fatalf("%d holders at once, want 1", max.Load())
	}
}
