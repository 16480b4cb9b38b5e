package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
)

// The container's root, built in the shim's private mount namespace at Dir/rootfs:
//
//   - an overlayfs whose lower layer is the host's root filesystem and whose
//     upper and work folders are Dir/upper and Dir/work: everything the container
//     writes (new mount points included) lands in Dir, the host never changes.
//     The upper folder lies inside the lower layer; since Linux 5.3 overlayfs
//     accepts that and only refuses lookups of the upper and work folders through
//     the overlay (ELOOP), which the hiding of Dir below makes unreachable.
//   - the host's other disk filesystems (a separate /home, /var, /boot, snaps...)
//     at their places: an overlay of their own (upper and work under
//     Dir/mounts/N) when writable, else a read-only bind. Other host mounts
//     (tmpfs, nsfs files such as pod network namespaces, FUSE, network
//     filesystems, other runtimes' overlays) are left out: a copy in the
//     container's namespace would pin them (a pod's network namespace would
//     outlive its removal) and they are no part of the "image";
//   - /proc: the host's, with /proc/sys, /proc/sysrq-trigger, /proc/irq and
//     /proc/bus read-only;
//   - /sys: a read-only sysfs mounted in the pod's network namespace (so that
//     /sys/class/net shows the pod's interfaces) plus the host's mounts below
//     /sys (cgroups), read-only;
//   - /dev: a small tmpfs with the usual device nodes bound from the host, the
//     host's /dev/pts (exec TTYs are allocated there), a private /dev/shm;
//   - /tmp: Dir/tmp;
//   - Dir itself: an empty read-only tmpfs (the container does not see its state).
//
// Everything is mounted in the shim's own namespace: it disappears with the last
// process of the container, so nothing is left to unmount.

// hostMount is one line of /proc/self/mountinfo.
type hostMount struct {
	point    string
	readOnly bool
	fsType   string
}

func readMountInfo(path string) ([]hostMount, error) {
	mounts, err := mountinfo.Read(path)
	if err != nil {
		return nil, err
	}
	out := make([]hostMount, len(mounts))
	for i, m := range mounts {
		out[i] = hostMount{point: m.Mountpoint, fsType: m.FSType}
		for _, o := range strings.Split(m.Options, ",") {
			if o == "ro" {
				out[i].readOnly = true
			}
		}
	}
	return out, nil
}

// within reports whether path is dir or below it (both clean and absolute).
func within(path, dir string) bool {
	if dir == "/" {
		return true
	}
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// diskFilesystems are the filesystem types of host mounts the container sees.
var diskFilesystems = map[string]bool{
	"ext2": true, "ext3": true, "ext4": true, "xfs": true, "btrfs": true, "zfs": true, "f2fs": true,
	"bcachefs": true, "jfs": true, "reiserfs": true, "vfat": true, "exfat": true, "ntfs": true, "ntfs3": true,
	"squashfs": true, "erofs": true,
}

// replaced are the host folders the container gets its own versions of.
var replaced = []string{"/proc", "/sys", "/dev", "/tmp"}

func isReplaced(path string) bool {
	for _, r := range replaced {
		if within(path, r) {
			return true
		}
	}
	return false
}

// escapeOverlay escapes a path for overlayfs's option parser.
func escapeOverlay(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`)
	return r.Replace(p)
}

func mountOverlay(lower, upper, work, target string) error {
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	// The overlay's root folder shows the upper folder's owner and mode: copy the
	// lower one's (a 0700 root would lock every other user out).
	var st unix.Stat_t
	if err := unix.Stat(lower, &st); err != nil {
		return err
	}
	if err := unix.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := unix.Chmod(upper, st.Mode&0o7777); err != nil {
		return err
	}
	opts := "lowerdir=" + escapeOverlay(lower) + ",upperdir=" + escapeOverlay(upper) + ",workdir=" + escapeOverlay(work)
	return unix.Mount("overlay", target, "overlay", 0, opts)
}

func setReadOnly(path string, recursive bool) error {
	flags := uint(0)
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	return unix.MountSetattr(unix.AT_FDCWD, path, flags, &attr)
}

func bindReadOnly(src, target string, recursive bool) error {
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, target, "", flags, ""); err != nil {
		return err
	}
	return setReadOnly(target, recursive)
}

// buildRoot assembles the container's root at dir/rootfs and returns its path.
// dir is the state folder, symbolic links resolved.
func buildRoot(dir string) (string, error) {
	rootfs := filepath.Join(dir, "rootfs")
	mounts, err := readMountInfo("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read the mount table: %w", err)
	}
	if err := mountOverlay("/", filepath.Join(dir, "upper"), filepath.Join(dir, "work"), rootfs); err != nil {
		return "", fmt.Errorf("mount the container's copy-on-write root (overlayfs over / with upper folder %s; "+
			"the state folder must be on a filesystem overlayfs accepts as upper layer, e.g. ext4, xfs, btrfs or tmpfs, "+
			"and the kernel must be 5.3 or newer): %w", filepath.Join(dir, "upper"), err)
	}
	in := func(p string) string { return filepath.Join(rootfs, p) }

	// Other host mounts, parents first (mountinfo's order).
	n := 0
	for _, m := range mounts {
		if m.point == "/" || isReplaced(m.point) || within(m.point, dir) || !diskFilesystems[m.fsType] {
			continue
		}
		fi, err := os.Stat(m.point)
		if err != nil {
			continue // hidden or gone
		}
		target := in(m.point)
		if !m.readOnly && fi.IsDir() {
			n++
			layer := filepath.Join(dir, "mounts", strconv.Itoa(n))
			if err := mountOverlay(m.point, filepath.Join(layer, "upper"), filepath.Join(layer, "work"), target); err == nil {
				continue
			}
		}
		if err := bindReadOnly(m.point, target, false); err != nil {
			return "", fmt.Errorf("bind the host mount %s into the container read-only: %w", m.point, err)
		}
	}

	// /proc
	if err := unix.Mount("/proc", in("/proc"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("bind /proc: %w", err)
	}
	for _, p := range []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"} {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if err := bindReadOnly(in(p), in(p), true); err != nil {
			return "", fmt.Errorf("make %s read-only: %w", p, err)
		}
	}

	// /sys
	if err := unix.Mount("sysfs", in("/sys"), "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err == nil {
		for _, m := range mounts {
			if m.point == "/sys" || !within(m.point, "/sys") {
				continue
			}
			err := unix.Mount(m.point, in(m.point), "", unix.MS_BIND, "")
			if err != nil && !errors.Is(err, unix.ENOENT) {
				return "", fmt.Errorf("bind %s: %w", m.point, err)
			}
		}
	} else if err := unix.Mount("/sys", in("/sys"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("bind /sys: %w", err)
	}
	if err := setReadOnly(in("/sys"), true); err != nil {
		return "", fmt.Errorf("make /sys read-only: %w", err)
	}

	if err := buildDev(in("/dev")); err != nil {
		return "", err
	}

	// /tmp
	if err := os.MkdirAll(in("/tmp"), 0o755); err != nil {
		return "", fmt.Errorf("create /tmp: %w", err)
	}
	if err := unix.Mount(filepath.Join(dir, "tmp"), in("/tmp"), "", unix.MS_BIND, ""); err != nil {
		return "", fmt.Errorf("bind the container's /tmp: %w", err)
	}

	// Hide the state folder (and with it the overlay's upper and work folders).
	if !isReplaced(dir) {
		if err := unix.Mount("tmpfs", in(dir), "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=755"); err != nil {
			return "", fmt.Errorf("hide the state folder: %w", err)
		}
	}
	return rootfs, nil
}

// buildDev makes the container's /dev: a tmpfs with bound device nodes.
func buildDev(dev string) error {
	if err := os.MkdirAll(dev, 0o755); err != nil {
		return fmt.Errorf("create /dev: %w", err)
	}
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev: %w", err)
	}
	for _, name := range []string{"null", "zero", "full", "random", "urandom", "tty", "ptmx"} {
		host := "/dev/" + name
		fi, err := os.Lstat(host)
		if err != nil {
			continue
		}
		target := filepath.Join(dev, name)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(host)
			if err != nil {
				return fmt.Errorf("read %s: %w", host, err)
			}
			if err := os.Symlink(link, target); err != nil {
				return fmt.Errorf("create /dev/%s: %w", name, err)
			}
		case fi.Mode()&fs.ModeDevice != 0:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o666)
			if err != nil {
				return fmt.Errorf("create /dev/%s: %w", name, err)
			}
			_ = f.Close()
			if err := unix.Mount(host, target, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind /dev/%s: %w", name, err)
			}
		}
	}
	if fi, err := os.Stat("/dev/pts"); err == nil && fi.IsDir() {
		target := filepath.Join(dev, "pts")
		if err := os.Mkdir(target, 0o755); err != nil {
			return fmt.Errorf("create /dev/pts: %w", err)
		}
		if err := unix.Mount("/dev/pts", target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind /dev/pts: %w", err)
		}
	}
	shm := filepath.Join(dev, "shm")
	if err := os.Mkdir(shm, 0o755); err != nil {
		return fmt.Errorf("create /dev/shm: %w", err)
	}
	if err := unix.Mount("shm", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("mount /dev/shm: %w", err)
	}
	for name, link := range map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(link, filepath.Join(dev, name)); err != nil {
			return fmt.Errorf("create /dev/%s: %w", name, err)
		}
	}
	return nil
}

// pivotRoot makes rootfs the root of the mount namespace and detaches the host's
// root from it.
func pivotRoot(rootfs string) error {
	oldRoot, err := unix.Open("/", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pivot into the container root: %w", err)
	}
	defer func() { _ = unix.Close(oldRoot) }()
	newRoot, err := unix.Open(rootfs, unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pivot into the container root: %w", err)
	}
	defer func() { _ = unix.Close(newRoot) }()
	if err := unix.Fchdir(newRoot); err != nil {
		return fmt.Errorf("pivot into the container root: %w", err)
	}
	// pivot_root(".", ".") stacks the old root on top of the new one; then the
	// old root is detached (lazily: the volume clones still reference it).
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot into the container root %s: %w", rootfs, err)
	}
	if err := unix.Fchdir(oldRoot); err != nil {
		return fmt.Errorf("pivot into the container root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("pivot into the container root: %w", err)
	}
	return nil
}
