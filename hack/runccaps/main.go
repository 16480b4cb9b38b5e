// Command runccaps is an OCI runtime for dockerd that runs runc after taking out of
// the process it is asked to start every capability outside its own bounding set.
//
// On this machine every process but PID 1 lacks CAP_SYS_RESOURCE in its bounding
// set. Docker 20.10 gives a privileged container every capability the kernel
// knows (and ignores --cap-drop with --privileged), so runc fails with "unable to
// apply caps: operation not permitted" — and kind's node containers are
// privileged, as are kind's `docker exec --privileged` calls. Newer engines
// (containerd's WithAllCurrentCapabilities) give a privileged container the
// capabilities they hold themselves; this wrapper does the same for Docker 20.10.
// hack/kind-deps.sh builds it and registers it as dockerd's default runtime only
// where the bounding set lacks a capability the kernel knows.
//
// It edits the bundle's config.json (`create`/`run --bundle DIR`) or the process
// file (`exec --process FILE`) in place and then execs runc (GAUNTLET_RUNC, else
// runc on PATH) with its arguments unchanged. Capability names it does not know
// are left for runc to judge.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// capNames are the Linux capabilities by number (linux/capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runccaps: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	bnd, err := boundingSet("/proc/self/status")
	if err != nil {
		return err
	}
	if path, field := target(args); path != "" {
		if err := filterFile(path, field, bnd); err != nil {
			return err
		}
	}
	runc := os.Getenv("GAUNTLET_RUNC")
	if runc == "" {
		if runc, err = exec.LookPath("runc"); err != nil {
			return err
		}
	}
	return syscall.Exec(runc, append([]string{runc}, args...), os.Environ())
}

// target names the file that holds the process runc will start and the JSON
// field of its capabilities: "<bundle>/config.json" and "process" for create and
// run, the --process file and "" (the file is the process) for exec.
func target(args []string) (path, field string) {
	value := func(i int, name string) (string, bool) {
		a := args[i]
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
		return "", false
	}
	for i := range args {
		for _, n := range []string{"--bundle", "-b"} {
			if v, ok := value(i, n); ok {
				return filepath.Join(v, "config.json"), "process"
			}
		}
		for _, n := range []string{"--process", "-p"} {
			if v, ok := value(i, n); ok {
				return v, ""
			}
		}
	}
	return "", ""
}

// boundingSet reads CapBnd from a /proc/PID/status file.
func boundingSet(status string) (uint64, error) {
	f, err := os.Open(status)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no CapBnd line in " + status)
}

func filterFile(path, field string, bnd uint64) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, changed, err := filterJSON(b, field, bnd)
	if err != nil || !changed {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, fi.Mode().Perm())
}

// filterJSON removes capabilities outside bnd from the capability sets of the
// process object (the document itself when field is ""). Other fields are kept.
func filterJSON(doc []byte, field string, bnd uint64) ([]byte, bool, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, false, err
	}
	proc := root
	if field != "" {
		p, ok := root[field].(map[string]any)
		if !ok {
			return doc, false, nil
		}
		proc = p
	}
	caps, ok := proc["capabilities"].(map[string]any)
	if !ok {
		return doc, false, nil
	}
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := make([]any, 0, len(list))
		for _, c := range list {
			if name, ok := c.(string); ok && !inSet(name, bnd) {
				changed = true
				continue
			}
			kept = append(kept, c)
		}
		caps[set] = kept
	}
	if !changed {
		return doc, false, nil
	}
	out, err := json.Marshal(root)
	return out, true, err
}

// inSet reports whether the capability is in bnd; names it does not know are kept.
func inSet(name string, bnd uint64) bool {
	for i, n := range capNames {
		if strings.EqualFold(n, name) {
			return bnd&(1<<uint(i)) != 0
		}
	}
	return true
}
