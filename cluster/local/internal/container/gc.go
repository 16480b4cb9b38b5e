package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// recordName is the file name of the PID record Start writes in Dir.
const recordName = "container" + pidfile.Suffix

// KillRecorded kills every container whose PID record (written by Start in its
// Dir) lies under root and names a live process, together with every other
// process in that container's mount namespace (exec'd commands and daemons that
// left the process group, which pidfile.Kill alone would miss), and removes the
// records. It is the clean-up after a crashed harness; it returns the number of
// live containers it killed.
func KillRecorded(root string, timeout time.Duration) (int, error) {
	records, err := pidfile.Find(root, func(name string) bool { return name == recordName })
	if err != nil {
		return 0, fmt.Errorf("container: find PID records: %w", err)
	}
	killed := 0
	var errs []error
	for _, path := range records {
		pid, alive, err := pidfile.Alive(path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if alive {
			killed++
			if f, ns, err := holdNamespace(pid, "mnt"); err == nil {
				killNamespace(ns)
				f.Close()
			}
		}
		if err := pidfile.Kill(path, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	// What the records cannot reach: processes of containers whose program is
	// gone already (it died with the harness, its parent-death signal, while
	// children it forked live on, adopted by init).
	killLeftovers(root)
	return killed, errors.Join(errs...)
}

// killLeftovers SIGKILLs, until none is left, every process whose root is the
// copy-on-write root of a container whose state folder lies under root: a
// process of a container keeps the container's mount namespace, whose "/" is the
// overlay buildRoot mounted with its upper folder in the state folder. The
// harness's own mount namespace is never matched.
func killLeftovers(root string) {
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	root = filepath.Clean(root)
	own := ownMountNS()
	self := os.Getpid()
	for round := 0; round < 20; round++ {
		names, _ := filepath.Glob("/proc/[0-9]*")
		found := 0
		for _, name := range names {
			pid, err := strconv.Atoi(filepath.Base(name))
			if err != nil || pid <= 1 || pid == self {
				continue
			}
			if ns, err := namespaceOf(pid, "mnt"); err != nil || ns == own {
				continue
			}
			if upper := rootUpperDir(pid); upper != "" && within(upper, root) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				found++
			}
		}
		if found == 0 {
			return
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
	}
}

// rootUpperDir returns the upper folder of process pid's root mount when that
// is an overlay, else "".
func rootUpperDir(pid int) string {
	mounts, err := mountinfo.Read("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return ""
	}
	upper := ""
	for _, m := range mounts {
		if m.Mountpoint != "/" {
			continue
		}
		// The last mount at "/" is the one the process sees.
		upper = ""
		if m.FSType == "overlay" {
			upper, _ = mountinfo.SuperOption(m, "upperdir")
		}
	}
	return upper
}

// ownMountNS is the mount namespace of the calling process, which no sweep may
// ever target.
func ownMountNS() nsID {
	id, _ := namespaceOf(os.Getpid(), "mnt")
	return id
}
