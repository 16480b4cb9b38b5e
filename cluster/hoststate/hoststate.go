// Package hoststate is what every cluster back end keeps on this machine, in one
// place: the state root (where clusters record themselves, their owner and their
// logs), the owner record that tells a live cluster from an abandoned one, the
// lock that serializes decisions under a folder, and the cache folder where
// `make` puts what it builds (control plane, CoreDNS, kind's node binaries).
package hoststate

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// EnvStateDir overrides the state root.
const EnvStateDir = "GAUNTLET_STATE_DIR"

// DefaultStateRoot is the state root unless told otherwise.
const DefaultStateRoot = "/var/lib/gauntlet"

// EnvCacheDir overrides the cache folder (default $XDG_CACHE_HOME/gauntlet or ~/.cache/gauntlet).
const EnvCacheDir = "GAUNTLET_CACHE_DIR"

// StateRoot resolves the state root: the argument, else $GAUNTLET_STATE_DIR, else DefaultStateRoot.
func StateRoot(root string) string {
	if root != "" {
		return root
	}
	if r := os.Getenv(EnvStateDir); r != "" {
		return r
	}
	return DefaultStateRoot
}

// CacheDir is Gauntlet's cache folder: $GAUNTLET_CACHE_DIR, else
// $XDG_CACHE_HOME/gauntlet, else ~/.cache/gauntlet.
func CacheDir() string {
	if d := os.Getenv(EnvCacheDir); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gauntlet")
}

// OwnerRecord is the path of the owner record in a cluster's folder dir: the
// process that owns the cluster (see internal/pidfile).
func OwnerRecord(dir string) string { return filepath.Join(dir, "owner.record") }

// RecordOwner records this process as the owner of the cluster in folder dir.
func RecordOwner(dir string) error {
	if err := pidfile.Write(OwnerRecord(dir), os.Getpid()); err != nil {
		return fmt.Errorf("record the owner of %s: %w", dir, err)
	}
	return nil
}

// OwnerAlive reports whether the owner recorded in folder dir still runs (false
// when there is no record).
func OwnerAlive(dir string) bool {
	_, alive, _ := pidfile.Alive(OwnerRecord(dir))
	return alive
}

// Lock waits for the exclusive lock of the file at path (created, with its
// folder, if missing), held until the returned function is called. Each call
// opens the file anew, and flock excludes other open files of the same file, so
// the lock holds against other goroutines as well as other processes.
func Lock(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
