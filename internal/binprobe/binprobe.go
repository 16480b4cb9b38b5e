// Package binprobe runs a program's self-description (`--version`, `-plugins`)
// and remembers the answer per program file, so a check that every cluster start
// makes costs one exec per binary build instead of one per start.
//
// A probe is the first thing a loaded machine's new cluster does, and a large
// static binary's first exec can take many seconds there (page-cache misses while
// other clusters run): the answer is therefore cached on disk, keyed by the file's
// path, size, modification time and inode, and a probe that times out is tried
// once more with a longer limit before it counts as a failure.
package binprobe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/atomicfile"
)

// Prober runs probes and caches their answers in Dir.
type Prober struct {
	// Dir holds one file per (program file, arguments); empty means no cache.
	Dir string
	// Timeout bounds the first attempt (default 30 s); the retry after a
	// timeout gets three times as long.
	Timeout time.Duration
}

// Output returns the combined output of `path args...`, from the cache when
// the same file answered the same arguments before.
func (p Prober) Output(ctx context.Context, path string, args ...string) (string, error) {
	key, keyErr := p.key(path, args)
	if keyErr == nil && p.Dir != "" {
		if b, err := os.ReadFile(filepath.Join(p.Dir, key)); err == nil {
			return string(b), nil
		}
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	out, err := run(ctx, timeout, path, args)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		out, err = run(ctx, 3*timeout, path, args)
	}
	if err != nil {
		return out, err
	}
	if keyErr == nil && p.Dir != "" {
		p.store(key, out) // best effort: a read-only cache only costs the next exec
	}
	return out, nil
}

func run(ctx context.Context, timeout time.Duration, path string, args []string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, path, args...)
	cmd.WaitDelay = time.Second // a killed program's children must not hold its output open
	out, err := cmd.CombinedOutput()
	if err != nil && cctx.Err() != nil {
		return string(out), fmt.Errorf("binprobe: %s %s: no answer within %s: %w", path, strings.Join(args, " "), timeout, cctx.Err())
	}
	if err != nil {
		return string(out), fmt.Errorf("binprobe: %s %s: %w", path, strings.Join(args, " "), err)
	}
	return string(out), nil
}

// key names the cache entry of path's current file and args.
func (p Prober) key(path string, args []string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	var ino uint64
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = sys.Ino
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00%d", abs, st.Size(), st.ModTime().UnixNano(), ino)
	for _, a := range args {
		fmt.Fprintf(h, "\x00%s", a)
	}
	return filepath.Base(abs) + "-" + hex.EncodeToString(h.Sum(nil))[:24], nil
}

func (p Prober) store(key, out string) {
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return
	}
	if err := atomicfile.Write(filepath.Join(p.Dir, key), []byte(out), 0o644); err != nil {
		return
	}
	p.prune()
}

// maxEntries bounds the cache: probes of short-lived binaries (tests' temporary
// builds) would otherwise pile up.
const maxEntries = 256

// prune removes the oldest entries beyond maxEntries.
func (p Prober) prune() {
	ents, err := os.ReadDir(p.Dir)
	if err != nil || len(ents) <= maxEntries {
		return
	}
	type aged struct {
		name string
		mod  time.Time
	}
	all := make([]aged, 0, len(ents))
	for _, e := range ents {
		if info, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), info.ModTime()})
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].mod.Before(all[j].mod) })
	for _, a := range all[:max(0, len(all)-maxEntries)] {
		os.Remove(filepath.Join(p.Dir, a.name))
	}
}
