// Package container runs a pod container as a local process: in the pod's network
// namespace, in a private mount namespace whose root is the host's filesystem seen
// through a copy-on-write layer kept in the container's state folder (so nothing on
// the host changes), with the pod's volumes bind-mounted at their mount paths, its
// own hostname, and the requested user and groups.
//
// The namespaced setup happens in a re-executed copy of the current binary (the
// "shim"); binaries and test binaries that start containers call Init first thing.
package container

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"
)

// ErrNotImplemented marks a contract stub that is not written yet.
var ErrNotImplemented = errors.New("container: not implemented")

// Mount is a bind mount of a host path into the container's filesystem.
type Mount struct {
	// Source is the host path (file or folder).
	Source string
	// Target is the absolute path inside the container; missing parents are created
	// in the container's private layer, never on the host.
	Target string
	// ReadOnly mounts it read-only.
	ReadOnly bool
}

// Spec describes one container process.
type Spec struct {
	// ID is unique per container instance (e.g. pod UID, container name, restart count).
	ID string
	// Dir is a private state folder for this instance; Start creates it. The
	// copy-on-write layer and the PID record (pidfile) live here.
	Dir string
	// NetNSPath is the network namespace file to join; empty means the host network.
	NetNSPath string
	// Hostname is set in a private UTS namespace; empty keeps the host's.
	Hostname string
	// Argv is the program (absolute path) and its arguments.
	Argv []string
	// Env is the complete environment, KEY=VALUE.
	Env []string
	// WorkingDir is the working directory inside the container; empty means "/".
	WorkingDir string
	// UID and GID, when set, are the user and group the program runs as.
	UID, GID *uint32
	// SupplementalGroups are added to the process's groups (fsGroup goes here).
	SupplementalGroups []uint32
	// Mounts are applied in order.
	Mounts []Mount
	// LogPath receives stdout and stderr in the CRI log format
	// ("<RFC3339Nano> stdout|stderr F <line>"), appended.
	LogPath string
}

// Exit is how a container process ended.
type Exit struct {
	// Code is the exit code; 128+signal when killed by a signal.
	Code int
	// Signal is the terminating signal, or 0.
	Signal syscall.Signal
	// Reason is "Completed" (code 0) or "Error" (anything else), as the kubelet reports.
	Reason string
	// FinishedAt is when the process ended.
	FinishedAt time.Time
}

// Process is a running (or finished) container process.
type Process struct{}

// Start starts the container described by spec and returns once the program has
// been exec'd (setup errors such as a missing program are returned here).
func Start(ctx context.Context, spec Spec) (*Process, error) { return nil, ErrNotImplemented }

// PID is the program's process ID (it leads its own process group).
func (p *Process) PID() int { return 0 }

// StartedAt is when the program started.
func (p *Process) StartedAt() time.Time { return time.Time{} }

// Done is closed when the program has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return nil }

// Exit reports how the program ended; valid once Done is closed.
func (p *Process) Exit() Exit { return Exit{} }

// Signal sends sig to the program's whole process group.
func (p *Process) Signal(sig syscall.Signal) error { return ErrNotImplemented }

// Stop sends SIGTERM, waits up to grace for the exit, then SIGKILL, and returns the exit.
func (p *Process) Stop(ctx context.Context, grace time.Duration) Exit { return Exit{} }

// Pause freezes the process group (SIGSTOP); Resume thaws it (SIGCONT).
func (p *Process) Pause() error { return ErrNotImplemented }

// Resume thaws a paused process group.
func (p *Process) Resume() error { return ErrNotImplemented }

// Paused reports whether the process is paused.
func (p *Process) Paused() bool { return false }

// TermSize is a terminal size for an exec with a TTY.
type TermSize struct{ Width, Height uint16 }

// ExecOptions describes a command run inside a running container.
type ExecOptions struct {
	Argv   []string
	Env    []string // nil means the container's environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TTY    bool
	Resize <-chan TermSize
}

// Exec runs a command in the container's namespaces, as its user, and returns the
// command's exit code. ctx cancellation kills the command.
func (p *Process) Exec(ctx context.Context, opts ExecOptions) (int, error) {
	return -1, ErrNotImplemented
}

// LogOptions selects what ReadLogs returns (the kubectl logs options).
type LogOptions struct {
	Tail       int // lines from the end; negative means all
	SinceTime  time.Time
	Timestamps bool
	LimitBytes int64 // 0 means no limit
	Follow     bool  // keep reading until ctx is done
}

// ReadLogs writes the log at path (CRI format) to w as kubectl shows it.
func ReadLogs(ctx context.Context, path string, opts LogOptions, w io.Writer) error {
	return ErrNotImplemented
}

// Init runs the shim when the current process was re-executed as one and never
// returns in that case; otherwise it returns false at once. Call it first in main
// and in TestMain of any test that starts containers.
func Init() bool { return false }
