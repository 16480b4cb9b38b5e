package podnet

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
)

// newNetNS creates a network namespace, persists it by bind-mounting it onto
// the file at path (created here), and returns a netlink handle whose socket
// lives inside it, with loopback already up. The caller closes the handle.
//
// The namespace is made on a dedicated OS thread that is never unlocked: when
// its goroutine returns, the Go runtime terminates the thread instead of
// returning it to the pool, so no goroutine can ever run in the wrong
// namespace, even if something below fails half-way.
func newNetNS(path string) (*netlink.Handle, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return nil, fmt.Errorf("podnet: create namespace file: %w", err)
	}
	f.Close()

	type result struct {
		h   *netlink.Handle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see above
		h, err := enterNewNetNS(path)
		ch <- result{h, err}
	}()
	r := <-ch
	if r.err != nil {
		if rmErr := removeNetNSFile(path); rmErr != nil {
			r.err = errors.Join(r.err, rmErr)
		}
		return nil, r.err
	}
	return r.h, nil
}

// enterNewNetNS runs on a locked thread that is discarded afterwards.
func enterNewNetNS(path string) (*netlink.Handle, error) {
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, fmt.Errorf("podnet: unshare network namespace (needs CAP_SYS_ADMIN, run as root): %w", err)
	}
	if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
		return nil, fmt.Errorf("podnet: bind-mount network namespace onto %s: %w", path, err)
	}
	// Pods are IPv4 only: keep IPv6 off the pod interface created next (it
	// would only send router solicitations the guard drops). Loopback keeps ::1
	// so programs that bind [::1] still work. /proc/sys/net is per namespace
	// and resolved from this thread at open time.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("podnet: disable IPv6 in the pod namespace: %w", err)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("podnet: open netlink socket in the pod namespace: %w", err)
	}
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("podnet: bring loopback up in the pod namespace: %w", err)
	}
	return h, nil
}

// removeNetNSFile unmounts (lazily, so a process still inside the namespace
// does not block it) and removes a namespace file. Missing files and files that
// are not mounted are fine.
func removeNetNSFile(path string) error {
	if err := unmountAll(path); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("podnet: remove namespace file: %w", err)
	}
	return nil
}

// unmountAll lazily unmounts everything mounted on path (mounts may stack).
func unmountAll(path string) error {
	for range 16 {
		err := unix.Unmount(path, unix.MNT_DETACH)
		switch {
		case err == nil:
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOENT):
			return nil // not (or no longer) a mount point
		default:
			return fmt.Errorf("podnet: unmount %s: %w", path, err)
		}
	}
	return fmt.Errorf("podnet: unmount %s: still mounted after 16 unmounts", path)
}

// makeSharedMountDir makes dir a mount point of its own with shared
// propagation, as iproute2 does for /run/netns: a mount namespace cloned
// later (a container) then receives the unmount of a namespace file instead
// of keeping a private copy that would pin the namespace alive.
func makeSharedMountDir(dir string) error {
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if !mounted {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("podnet: bind-mount %s onto itself: %w", dir, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED, ""); err != nil {
		return fmt.Errorf("podnet: make %s a shared mount: %w", dir, err)
	}
	return nil
}

// mountPointsUnder lists the mount points in this process's mount namespace
// that are dir or below it.
func mountPointsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("podnet: read mount table: %w", err)
	}
	defer f.Close()
	dir = filepath.Clean(dir)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := mountinfo.Unescape(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("podnet: read mount table: %w", err)
	}
	return out, nil
}

func isMountPoint(path string) (bool, error) {
	mps, err := mountPointsUnder(path)
	if err != nil {
		return false, err
	}
	path = filepath.Clean(path)
	for _, mp := range mps {
		if mp == path {
			return true, nil
		}
	}
	return false, nil
}
