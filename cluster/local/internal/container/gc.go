package container

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/pidfile"
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
	var records []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if !d.IsDir() && d.Name() == recordName {
			records = append(records, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("container: find PID records under %s: %w", root, err)
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
	return killed, errors.Join(errs...)
}

// ownMountNS is the mount namespace of the calling process, which no sweep may
// ever target.
func ownMountNS() nsID {
	id, _ := namespaceOf(os.Getpid(), "mnt")
	return id
}
