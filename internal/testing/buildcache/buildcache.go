// Package buildcache shares a binary that several tests build from the same inputs (the
// bundled operator with a seeded bug's patch, or without one) among the tests of one test run,
// across their packages' processes: the first test to ask builds it, the others wait for it
// and reuse it. It is test support.
//
// The cache is the folder named by $GAUNTLET_TEST_BUILDS, which `make test` creates empty for
// each run and removes after it: within a run the source tree does not change, so a binary is
// named by what tells the builds apart (a patch's content). Without the variable every call
// builds afresh into the test's temporary folder.
package buildcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// EnvDir names the folder the binaries of one test run are kept in.
const EnvDir = "GAUNTLET_TEST_BUILDS"

// Binary returns the path of the binary named name built from the inputs key (any bytes that
// tell builds apart), calling build(out) to write it to out unless this run already built it.
// A failed build fails tb and is not kept, so the next test to ask tries again.
func Binary(tb testing.TB, name string, key []byte, build func(out string) error) string {
	tb.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		out := filepath.Join(tb.TempDir(), name)
		if err := build(out); err != nil {
			tb.Fatal(err)
		}
		return out
	}
	path, err := cached(dir, name, key, build)
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// cached builds, under an exclusive lock on its own lock file (held by one process at a time),
// the binary for key unless it is there.
func cached(dir, name string, key []byte, build func(out string) error) (string, error) {
	h := sha256.Sum256(key)
	id := hex.EncodeToString(h[:12])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("test build cache %s (%s): %w", dir, EnvDir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, id+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("test build cache: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("test build cache: lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	final := filepath.Join(dir, id, name)
	if _, err := os.Stat(final); err == nil {
		return final, nil
	}
	tmp := filepath.Join(dir, id+".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return "", fmt.Errorf("test build cache: %w", err)
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("test build cache: %w", err)
	}
	t0 := time.Now()
	if err := build(filepath.Join(tmp, name)); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(dir, id)); err != nil {
		return "", fmt.Errorf("test build cache: keep %s (built in %s): %w", name, time.Since(t0).Round(time.Millisecond), err)
	}
	return final, nil
}

// Operator returns the bundled Valkey operator built with the patch file (the clean operator
// for ""), calling build(out) unless this run already built it: every package's tests name
// the same operator build by the same key.
func Operator(tb testing.TB, patch string, build func(out string) error) string {
	tb.Helper()
	key := []byte("valkey-operator clean")
	if patch != "" {
		b, err := os.ReadFile(patch)
		if err != nil {
			tb.Fatal(err)
		}
		key = append([]byte("valkey-operator patched\n"), b...)
	}
	return Binary(tb, "valkey-operator", key, build)
}
