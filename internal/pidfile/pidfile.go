// Package pidfile records the processes a cluster starts so that they can be found
// and killed after the harness itself died (gauntlet cluster gc). A record holds the
// PID and the process's start time from /proc, so a reused PID is never killed.
package pidfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Suffix is the file name suffix of every record; Walk finds records by it.
const Suffix = ".pid"

// ErrNotRecord is returned for a file named like a record that does not hold
// one ("PID START-TIME"): another program's PID file.
var ErrNotRecord = errors.New("not a process record")

func truncate(b []byte) []byte {
	if len(b) > 60 {
		return b[:60]
	}
	return b
}

// Write records pid in path (which should end in Suffix).
func Write(path string, pid int) error {
	st, err := StartTime(pid)
	if err != nil {
		return fmt.Errorf("pidfile: record %d: %w", pid, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("pidfile: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d %d\n", pid, st)), 0o644); err != nil {
		return fmt.Errorf("pidfile: %w", err)
	}
	return os.Rename(tmp, path)
}

// Alive reports the PID recorded in path and whether that same process still runs.
func Alive(path string) (int, bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false, fmt.Errorf("pidfile: %s: %w: %q", path, ErrNotRecord, truncate(b))
	}
	pid, err1 := strconv.Atoi(f[0])
	want, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false, fmt.Errorf("pidfile: %s: %w: %q", path, ErrNotRecord, truncate(b))
	}
	got, err := StartTime(pid)
	if err != nil {
		return pid, false, nil
	}
	return pid, got == want, nil
}

// Kill sends SIGKILL to the process recorded in path and to its process group if
// it leads one, waits up to timeout for it to disappear, and removes the record.
// A record whose process is gone is simply removed.
func Kill(path string, timeout time.Duration) error {
	pid, alive, err := Alive(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if alive {
		if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		deadline := time.Now().Add(timeout)
		for {
			if _, ok, _ := Alive(path); !ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("pidfile: process %d (%s) survived SIGKILL for %s", pid, path, timeout)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Find lists the files under root whose name match accepts; folders that vanish or
// cannot be read while it walks are passed over, and a missing root is no error.
func Find(root string, match func(name string) bool) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if !d.IsDir() && match(d.Name()) {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pidfile: walk %s: %w", root, err)
	}
	return paths, nil
}

// KillAll kills every recorded process under root (see Kill) and returns the
// number of live processes it killed.
func KillAll(root string, timeout time.Duration) (int, error) {
	paths, err := Find(root, func(name string) bool { return strings.HasSuffix(name, Suffix) })
	if err != nil {
		return 0, err
	}
	killed := 0
	var errs []error
	for _, p := range paths {
		_, ok, err := Alive(p)
		if errors.Is(err, ErrNotRecord) {
			// Not one of ours: a program's own PID file inside a pod's
			// volume (PostgreSQL's postmaster.pid) is left alone.
			continue
		}
		if ok {
			killed++
		}
		if err := Kill(p, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}

// StartTime reads field 22 of /proc/PID/stat (start time in clock ticks since boot).
func StartTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); start time is field 22.
	if f[0] == "Z" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}
