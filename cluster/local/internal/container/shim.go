package container

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/deathsig"
)

// The shim is the current binary re-executed by Start with new mount and UTS
// namespaces and its own process group. On its main thread (locked, because the
// network namespace is per thread) it:
//
//  1. reads its configuration from fd 3;
//  2. joins the pod's network namespace and sets the hostname;
//  3. makes every mount private, clones the volume sources (open_tree), builds the
//     container's root (rootfs.go) and pivots into it;
//  4. attaches the volumes at their targets, creating missing mount points in
//     the copy-on-write layer;
//  5. resolves the user's group and home, prepares the working directory and
//     reports Ready on fd 4;
//  6. drops to the requested user and groups, re-arms its parent-death signal
//     (deathsig.Arm: it dies with the harness), changes to the working directory
//     and execs the program, which keeps the shim's PID.
//
// fd 4 is close-on-exec: Start sees it close after Ready when execve succeeded.
// Any error is written to fd 4 instead and the shim exits.

func shimMain() {
	runtime.LockOSThread()
	// Read first: the harness (our parent) set a parent-death signal that a
	// change of user clears; runShim arms it again before the exec.
	parent := os.Getppid()
	status := os.NewFile(shimStatusFD, "status")
	syscall.CloseOnExec(shimStatusFD)
	defer func() {
		if r := recover(); r != nil {
			report(status, shimMessage{Error: fmt.Sprintf("container shim panicked: %v", r)})
			os.Exit(shimFailedExit)
		}
	}()
	err := runShim(status, parent)
	report(status, shimMessage{Error: err.Error()})
	os.Exit(shimFailedExit)
}

func report(status *os.File, m shimMessage) {
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	_, _ = status.Write(append(b, '\n'))
}

// runShim returns only on failure. parent is the harness's PID.
func runShim(status *os.File, parent int) error {
	var cfg shimConfig
	cf := os.NewFile(shimConfigFD, "config")
	err := json.NewDecoder(cf).Decode(&cfg)
	_ = cf.Close()
	if err != nil {
		return fmt.Errorf("read the shim configuration: %w", err)
	}
	spec := cfg.Spec

	if spec.NetNSPath != "" {
		if err := joinNetNS(spec.NetNSPath); err != nil {
			return err
		}
	}
	if spec.Hostname != "" {
		if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
			return fmt.Errorf("set the hostname %q: %w", spec.Hostname, err)
		}
	}

	// Nothing done from here on may propagate to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	sources, err := openMountSources(spec.Mounts)
	defer func() {
		for _, s := range sources {
			_ = unix.Close(s.fd)
		}
	}()
	if err != nil {
		return err
	}
	rootfs, err := buildRoot(cfg.Dir)
	if err != nil {
		return err
	}
	if err := pivotRoot(rootfs); err != nil {
		return err
	}
	writeHostFiles(spec)
	for i, m := range spec.Mounts {
		if err := attachMount(sources[i], m); err != nil {
			return err
		}
	}

	id := resolveIdentity(spec)
	wd := spec.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := prepareWorkingDir(wd); err != nil {
		return err
	}
	report(status, shimMessage{Ready: &shimReady{GID: id.gid, Groups: id.groups, Home: id.home}})

	env := spec.Env
	if _, ok := lookupEnv(env, "HOME"); !ok {
		env = append(append([]string(nil), env...), "HOME="+id.home)
	}
	if id.setIDs {
		gids := make([]int, len(id.groups))
		for i, g := range id.groups {
			gids[i] = int(g)
		}
		if err := syscall.Setgroups(gids); err != nil {
			return fmt.Errorf("set the supplemental groups %v: %w", id.groups, err)
		}
		if err := syscall.Setgid(int(id.gid)); err != nil {
			return fmt.Errorf("set the group ID %d: %w", id.gid, err)
		}
		if err := syscall.Setuid(int(id.uid)); err != nil {
			return fmt.Errorf("set the user ID %d: %w", id.uid, err)
		}
	}
	// The container dies with the harness (the kernel cleared the signal if the
	// identity changed above).
	if err := deathsig.Arm(parent); err != nil {
		return err
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("change to the working directory %s as uid %d gid %d: %w", wd, id.uid, id.gid, err)
	}
	path, err := lookPath(spec.Argv[0], env)
	if err != nil {
		return err
	}
	err = syscall.Exec(path, spec.Argv, env)
	if errors.Is(err, syscall.ENOENT) {
		return fmt.Errorf("exec %s: the program (or its interpreter) does not exist in the container's filesystem: %w", path, err)
	}
	return fmt.Errorf("exec %s as uid %d: %w", path, id.uid, err)
}

func joinNetNS(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the network namespace %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("join the network namespace %s (is it a network namespace file?): %w", path, err)
	}
	return nil
}

// mountSource is a detached copy of a volume's source tree, taken before the
// pivot hides the host's paths.
type mountSource struct {
	fd    int
	isDir bool
}

func openMountSources(mounts []Mount) ([]mountSource, error) {
	out := make([]mountSource, 0, len(mounts))
	for _, m := range mounts {
		fd, err := unix.OpenTree(unix.AT_FDCWD, m.Source,
			unix.OPEN_TREE_CLONE|unix.O_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			return out, fmt.Errorf("volume source %s (for %s): %w", m.Source, m.Target, err)
		}
		src := mountSource{fd: fd}
		out = append(out, src)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return out, fmt.Errorf("volume source %s: %w", m.Source, err)
		}
		out[len(out)-1].isDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		if m.ReadOnly {
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
			if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
				return out, fmt.Errorf("make the volume %s read-only: %w", m.Source, err)
			}
		}
	}
	return out, nil
}

// attachMount mounts a cloned source at its target, inside the container's root.
// Missing parents and the mount point itself are created in the copy-on-write
// layer (or inside a volume mounted earlier, as the kubelet does).
func attachMount(src mountSource, m Mount) error {
	target := filepath.Clean(m.Target)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("mount %s at %s: %s", m.Source, m.Target, fmt.Sprintf(format, args...))
	}
	if src.isDir {
		if err := os.MkdirAll(target, 0o755); err != nil {
			return fail("create the mount point: %v", err)
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return fail("create the mount point's folder: %v", err)
		}
		fi, err := os.Stat(target)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			f, err := os.OpenFile(target, os.O_RDONLY|os.O_CREATE, 0o644)
			if err != nil {
				return fail("create the mount point: %v", err)
			}
			_ = f.Close()
		case err != nil:
			return fail("%v", err)
		case fi.IsDir():
			return fail("the source is a file but the target is a folder")
		}
	}
	if err := unix.MoveMount(src.fd, "", unix.AT_FDCWD, target,
		unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_SYMLINKS); err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return fail("the source is a folder but the target is a file")
		}
		return fail("%v", err)
	}
	return nil
}

// writeHostFiles gives the container an /etc/hostname and an /etc/hosts entry for
// its hostname, in its copy-on-write layer, unless volumes provide them. Best
// effort: a read-only /etc keeps the host's files.
func writeHostFiles(spec Spec) {
	if spec.Hostname == "" {
		return
	}
	mounted := map[string]bool{}
	for _, m := range spec.Mounts {
		mounted[filepath.Clean(m.Target)] = true
	}
	if !mounted["/etc/hostname"] {
		_ = os.WriteFile("/etc/hostname", []byte(spec.Hostname+"\n"), 0o644)
	}
	if !mounted["/etc/hosts"] {
		b, err := os.ReadFile("/etc/hosts")
		if err != nil || hostsHas(string(b), spec.Hostname) {
			return
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			b = append(b, '\n')
		}
		b = append(b, "127.0.1.1\t"+spec.Hostname+"\n"...)
		_ = os.WriteFile("/etc/hosts", b, 0o644)
	}
}

func hostsHas(hosts, name string) bool {
	for _, line := range strings.Split(hosts, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		for _, h := range f[min(1, len(f)):] {
			if h == name {
				return true
			}
		}
	}
	return false
}

func prepareWorkingDir(wd string) error {
	fi, err := os.Stat(wd)
	if errors.Is(err, fs.ErrNotExist) {
		// As container runtimes do: create it (in the copy-on-write layer).
		if err := os.MkdirAll(wd, 0o755); err != nil {
			return fmt.Errorf("create the working directory %s: %w", wd, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("working directory %s: %w", wd, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("working directory %s is not a folder", wd)
	}
	return nil
}

// defaultPath is searched for a program named without a slash when the
// environment has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// lookPath finds a program named without a slash in env's PATH, in the current
// root (the container's, after the pivot or setns).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = defaultPath
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q not found in PATH %q", name, path)
}
