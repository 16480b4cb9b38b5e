package hoststate

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcSys is where the kernel's settings are read and written.
const ProcSys = "/proc/sys"

// KernelMinimum is a kernel setting (a path under /proc/sys) and the least
// value test clusters need of it.
type KernelMinimum struct {
	Setting string
	Min     int64
}

// InotifyMinimums are the inotify settings every test cluster's pods share:
// the nodes of the embedded cluster and of kind run on the host's kernel, so
// all pods that run as one user (config reloaders as nobody, in every cluster
// at once) draw on one per-user budget that a real node keeps for its own
// pods. The kernel's default of 128 instances was used up by six clusters'
// config reloaders ("create watcher: too many open files"); the values are
// the ones kind's documentation advises for the same error.
func InotifyMinimums() []KernelMinimum {
	return []KernelMinimum{
		{Setting: "fs/inotify/max_user_instances", Min: 8192},
		{Setting: "fs/inotify/max_user_watches", Min: 524288},
	}
}

// RaiseKernelLimits raises each setting of mins under procSys (ProcSys, or
// another folder in tests) that is below its minimum to that minimum, and
// logs each change with the value before it. A setting already high enough
// is left alone. It needs root: the error, for a setting it could not read
// or write, names the setting and the command that raises it by hand.
func RaiseKernelLimits(log *slog.Logger, procSys string, mins []KernelMinimum) error {
	var errs []error
	for _, m := range mins {
		path := filepath.Join(procSys, m.Setting)
		name := strings.ReplaceAll(m.Setting, "/", ".")
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", name, err))
			continue
		}
		cur, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %q is not a number", name, strings.TrimSpace(string(b))))
			continue
		}
		if cur >= m.Min {
			continue
		}
		if err := os.WriteFile(path, []byte(strconv.FormatInt(m.Min, 10)+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("raise %s from %d to %d (as root: sysctl -w %s=%d): %w", name, cur, m.Min, name, m.Min, err))
			continue
		}
		if log != nil {
			log.Info("raised a host kernel limit that every test cluster's pods share", "setting", name, "from", cur, "to", m.Min)
		}
	}
	return errors.Join(errs...)
}
