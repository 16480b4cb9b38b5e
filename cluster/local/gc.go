package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/container"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
)

// GC removes every cluster under root (see StateRoot) whose owning process is
// gone (killed, even with SIGKILL): it kills the cluster's processes, removes its
// network namespaces, veths, bridge and mounts, and deletes its folder. It does
// the same under every state root registered in root (Create registers a root
// other than StateRoot("") there, e.g. a test's temporary root), and forgets
// registered roots that hold no cluster any more. It returns the names of the
// clusters it removed, followed by " (state root DIR)" for those under another
// root. Clusters whose owner runs are left alone.
func GC(ctx context.Context, root string) ([]string, error) {
	home := StateRoot(root)
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	removed, err := gcRoot(ctx, home, "")
	errs := []error{err}
	others, rerr := registeredRoots(home)
	errs = append(errs, rerr)
	for other, rec := range others {
		if filepath.Clean(other) == filepath.Clean(home) {
			continue
		}
		names, err := gcRoot(ctx, other, rec)
		for _, n := range names {
			removed = append(removed, n+" (state root "+other+")")
		}
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// gcRoot collects the clusters under one state root. It holds the root's lock
// (which Create holds while it makes a cluster's folder, records its owner and
// registers the root), so a cluster being created is never taken for an
// abandoned one. When record is set (root is a registered root) and root holds
// no cluster any more, it removes the record.
func gcRoot(ctx context.Context, root, record string) ([]string, error) {
	if _, err := os.Stat(clustersDir(root)); errors.Is(err, fs.ErrNotExist) {
		if record != "" {
			_ = os.Remove(record)
		}
		return nil, nil
	}
	unlock, err := lockRoot(root)
	if err != nil {
		return nil, err
	}
	defer unlock()
	infos, err := List(root)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, info := range infos {
		if info.Running {
			continue
		}
		if err := purge(ctx, info); err != nil {
			errs = append(errs, fmt.Errorf("gc %s: %w", info.Name, err))
			continue
		}
		removed = append(removed, info.Name)
	}
	if entries, err := os.ReadDir(clustersDir(root)); record != "" && err == nil && len(entries) == 0 {
		_ = os.Remove(record)
	}
	return removed, errors.Join(errs...)
}

// liveClusterNamed reports whether a cluster called name, other than the one in
// folder self, has a live owner under the home state root or any root
// registered there. An unreadable registry counts as live: it is never a
// reason to remove another cluster's network.
func liveClusterNamed(name, self string) bool {
	home := StateRoot("")
	others, err := registeredRoots(home)
	if err != nil {
		return true
	}
	roots := append([]string{home}, slices.Collect(maps.Keys(others))...)
	for _, root := range roots {
		infos, err := List(root)
		if err != nil {
			return true
		}
		for _, info := range infos {
			// List has checked the owner (Info.Running).
			if info.Name == name && info.Running && filepath.Clean(info.Dir) != filepath.Clean(self) {
				return true
			}
		}
	}
	return false
}

// Down deletes the cluster called name from another process: it asks the owner to
// stop (SIGTERM), waits up to timeout, then removes whatever is left like GC.
func Down(ctx context.Context, root, name string, timeout time.Duration) error {
	root = StateRoot(root)
	if os.Geteuid() != 0 {
		return ErrNotRoot
	}
	dir := filepath.Join(clustersDir(root), name)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("%w: %s (see `gauntlet cluster list`)", ErrNotFound, name)
	}
	info, err := readInfo(dir)
	if err != nil {
		info = Info{Name: name, Dir: dir}
	}
	if pid, alive, _ := pidfile.Alive(hoststate.OwnerRecord(dir)); alive && pid != os.Getpid() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		deadline := time.Now().Add(timeout)
		for time.Now().Before(deadline) {
			if _, alive, _ := pidfile.Alive(hoststate.OwnerRecord(dir)); !alive {
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
		if _, alive, _ := pidfile.Alive(hoststate.OwnerRecord(dir)); alive {
			_ = pidfile.Kill(hoststate.OwnerRecord(dir), 5*time.Second)
		}
	}
	if _, err := os.Stat(dir); err != nil {
		return nil // the owner cleaned up
	}
	return purge(ctx, info)
}

// purge removes everything a cluster may have left: processes, network, mounts, folder.
func purge(ctx context.Context, info Info) error {
	var errs []error
	// Containers first: KillRecorded also reaches processes that left their group.
	if _, err := container.KillRecorded(info.Dir, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if _, err := pidfile.KillAll(info.Dir, 10*time.Second); err != nil {
		errs = append(errs, err)
	}
	if info.PodCIDR.IsValid() {
		cfg := podnet.Config{Name: info.Name, StateDir: info.Dir, CIDR: info.PodCIDR, ServiceCIDR: info.ServiceCIDR}
		if err := podnet.Cleanup(ctx, cfg); err != nil {
			errs = append(errs, fmt.Errorf("pod network: %w", err))
		}
	}
	if err := unmountUnder(info.Dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(info.Dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", info.Dir, err))
		} else {
			removeLog(info)
		}
	}
	return errors.Join(errs...)
}

// unmountUnder detaches every mount point at or below dir, deepest first.
func unmountUnder(dir string) error {
	points, err := mountinfo.MountPoints(dir)
	if err != nil {
		return err
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}
