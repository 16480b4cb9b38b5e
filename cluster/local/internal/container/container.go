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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/sys/reexec"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/deathsig"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// ErrExited is returned by operations that need a running process (Signal, Pause,
// Resume, Exec) once the container's program has exited.
var ErrExited = errors.New("container: the program has exited; start a new container instead")

// ErrAlreadyRunning is returned by Start when Dir's PID record names a live process:
// two instances must not share a state folder.
var ErrAlreadyRunning = errors.New("container: a process recorded in the state folder is still running; stop it or use another Dir")

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
type Process struct {
	id        string
	pid       int
	startedAt time.Time
	pidPath   string
	mntNS     nsID // the container's mount namespace, to find all its processes
	// nsFile holds the mount namespace open from Start until the last sweep: a
	// namespace that is held cannot be freed, so its inode number cannot be reused by
	// a new container's namespace while a sweep still matches processes against it.
	nsMu   sync.RWMutex
	nsFile *os.File

	// What Exec needs to run a command as the container does.
	env     []string
	workDir string
	cred    *syscall.Credential // nil: root, as the program

	done chan struct{}

	mu     sync.Mutex
	reaped bool // the program has been waited for: its PID may be reused
	paused bool
	exit   Exit
}

// Start-up protocol between Start and the shim (see shim.go).
const (
	shimName       = "gauntlet-container-shim"
	shimConfigFD   = 3 // the shim reads a shimConfig (JSON) from here
	shimStatusFD   = 4 // and writes shimMessages here; close-on-exec
	shimFailedExit = 126
)

// shimConfig is what Start sends to the shim.
type shimConfig struct {
	Spec Spec
	// Dir is Spec.Dir with symbolic links resolved.
	Dir string
}

// shimMessage is what the shim reports back before exec (Ready) or instead (Error).
type shimMessage struct {
	Error string `json:",omitempty"`
	Ready *shimReady
}

// shimReady carries the resolved identity of the program.
type shimReady struct {
	GID    uint32
	Groups []uint32
	Home   string
}

// Start starts the container described by spec and returns once the program has
// been exec'd (setup errors such as a missing program are returned here).
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if err := validate(spec); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("container %s: start: %w", spec.ID, err)
	}
	dir, err := prepareDir(spec.Dir)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", spec.ID, err)
	}
	pidPath := filepath.Join(dir, recordName)
	if pid, alive, _ := pidfile.Alive(pidPath); alive {
		return nil, fmt.Errorf("container %s: %s holds process %d: %w", spec.ID, pidPath, pid, ErrAlreadyRunning)
	}
	logs, err := openLog(spec.LogPath)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", spec.ID, err)
	}
	config, err := json.Marshal(shimConfig{Spec: spec, Dir: dir})
	if err != nil {
		logs.close()
		return nil, fmt.Errorf("container %s: encode the shim configuration: %w", spec.ID, err)
	}

	// All pipes are created close-on-exec; the child gets its ends through dup2.
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			return nil, nil, fmt.Errorf("container %s: create a pipe: %w", spec.ID, err)
		}
		return r, w, nil
	}
	outR, outW, err := pipe()
	if err != nil {
		logs.close()
		return nil, err
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll([]*os.File{outR, outW})
		logs.close()
		return nil, err
	}
	cfgR, cfgW, err := pipe()
	if err != nil {
		closeAll([]*os.File{outR, outW, errR, errW})
		logs.close()
		return nil, err
	}
	stR, stW, err := pipe()
	if err != nil {
		closeAll([]*os.File{outR, outW, errR, errW, cfgR, cfgW})
		logs.close()
		return nil, err
	}
	parentEnds = []*os.File{cfgW, stR}
	childEnds = []*os.File{outW, errW, cfgR, stW}

	// Not reexec.Command: its Pdeathsig would kill the container when whatever
	// harness thread forked it exits. deathsig.Start forks from a thread that
	// lives as long as the harness, so the container dies with the harness (even
	// a SIGKILLed one) and with nothing else; the shim re-arms the signal after
	// changing user (see shim.go).
	cmd := &exec.Cmd{
		Path:       reexec.Self(),
		Args:       []string{shimName},
		Env:        []string{},
		Stdout:     outW,
		Stderr:     errW,
		ExtraFiles: []*os.File{cfgR, stW}, // fds 3 and 4
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
			// A session of its own: the program leads its process group and is
			// detached from the harness's terminal (no SIGINT from a ^C there, no
			// SIGTTIN, /dev/tty is not the harness's).
			Setsid: true,
		},
	}
	if err := deathsig.Start(cmd); err != nil {
		closeAll(childEnds)
		closeAll(parentEnds)
		closeAll([]*os.File{outR, errR})
		logs.close()
		return nil, fmt.Errorf("container %s: start the shim %s: %w", spec.ID, reexec.Self(), err)
	}
	closeAll(childEnds)
	pid := cmd.Process.Pid
	// The shim is in its new mount namespace already and waits for its
	// configuration, so this cannot race with its exit.
	nsFile, mntNS, nsErr := holdNamespace(pid, "mnt")

	p := &Process{
		id:      spec.ID,
		pid:     pid,
		pidPath: pidPath,
		env:     spec.Env,
		workDir: spec.WorkingDir,
		mntNS:   mntNS,
		nsFile:  nsFile,
		done:    make(chan struct{}),
	}
	if p.workDir == "" {
		p.workDir = "/"
	}
	copied := logs.copyStreams(outR, errR)

	// abort kills and reaps a shim that did not get to exec the program.
	abort := func(cause error) (*Process, error) {
		defer p.releaseNamespace()
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		closeAll(parentEnds)
		copied.finish(drainTimeout)
		logs.close()
		_ = os.Remove(pidPath)
		return nil, fmt.Errorf("container %s: %w", spec.ID, cause)
	}

	if nsErr != nil {
		return abort(fmt.Errorf("find the shim's mount namespace: %w", nsErr))
	}
	// Record the process first thing so that a crashed harness's containers can
	// be found; the shim's PID and start time are the program's after exec.
	if err := pidfile.Write(pidPath, pid); err != nil {
		return abort(fmt.Errorf("record the process: %w", err))
	}

	// Send the configuration and wait for the verdict, honouring ctx.
	type verdict struct {
		ready *shimReady
		err   error
	}
	verdictc := make(chan verdict, 1)
	go func() {
		_, werr := cfgW.Write(config)
		_ = cfgW.Close()
		var v verdict
		dec := json.NewDecoder(stR)
		for {
			var m shimMessage
			if err := dec.Decode(&m); err != nil {
				if !errors.Is(err, io.EOF) && v.err == nil {
					v.err = fmt.Errorf("read the shim's status: %w", err)
				}
				break
			}
			if m.Error != "" && v.err == nil {
				v.err = errors.New(m.Error)
			}
			if m.Ready != nil {
				v.ready = m.Ready
			}
		}
		if v.err == nil && v.ready == nil {
			if werr != nil {
				v.err = fmt.Errorf("send the configuration to the shim: %w", werr)
			} else {
				v.err = errors.New("the shim exited without reporting (see the container log for its output)")
			}
		}
		verdictc <- v
	}()
	var v verdict
	select {
	case v = <-verdictc:
	case <-ctx.Done():
		// Kill the shim; the status pipe then closes and the reader goroutine ends.
		res, err := abort(fmt.Errorf("start: %w", ctx.Err()))
		<-verdictc
		return res, err
	}
	if v.err != nil {
		return abort(v.err)
	}
	_ = stR.Close()
	p.startedAt = time.Now()

	if spec.UID != nil || spec.GID != nil || len(spec.SupplementalGroups) > 0 {
		p.cred = &syscall.Credential{Uid: 0, Gid: v.ready.GID, Groups: toGroups(v.ready.Groups)}
		if spec.UID != nil {
			p.cred.Uid = *spec.UID
		}
	}
	if _, ok := lookupEnv(spec.Env, "HOME"); !ok {
		p.env = append(append([]string(nil), spec.Env...), "HOME="+v.ready.Home)
	}
	go p.reap(cmd, copied, logs)
	return p, nil
}

// drainTimeout bounds how long log and exec output copying may continue after
// every process that could write has been killed.
const drainTimeout = 2 * time.Second

// reap waits for the program, kills what is left of the container, finishes the
// log and removes the PID record.
func (p *Process) reap(cmd *exec.Cmd, copied *copying, logs *logFile) {
	_ = cmd.Wait()
	finished := time.Now()
	p.mu.Lock()
	p.reaped = true
	p.mu.Unlock()
	exit := exitOf(cmd.ProcessState, finished)

	// Like a pod container whose PID 1 ends: nothing of it outlives the program.
	// Every process of the container shares its mount namespace (exec'd commands
	// included, whatever their process group).
	p.sweep()
	p.releaseNamespace()
	copied.finish(drainTimeout)
	logs.close()
	_ = os.Remove(p.pidPath)

	p.mu.Lock()
	p.exit = exit
	p.paused = false
	p.mu.Unlock()
	close(p.done)
}

func exitOf(st *os.ProcessState, at time.Time) Exit {
	e := Exit{FinishedAt: at, Code: -1}
	if st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				e.Code = ws.ExitStatus()
			case ws.Signaled():
				e.Signal = ws.Signal()
				e.Code = 128 + int(e.Signal)
			}
		}
	}
	e.Reason = "Error"
	if e.Code == 0 {
		e.Reason = "Completed"
	}
	return e
}

// validate checks what can be checked before anything is created.
func validate(spec Spec) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("container %s: invalid spec: %s", spec.ID, fmt.Sprintf(format, args...))
	}
	if spec.Dir == "" || !filepath.IsAbs(spec.Dir) {
		return bad("Dir %q must be an absolute path", spec.Dir)
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return bad("Argv is empty; set the program to run")
	}
	if spec.WorkingDir != "" && !filepath.IsAbs(spec.WorkingDir) {
		return bad("WorkingDir %q must be an absolute path", spec.WorkingDir)
	}
	if spec.LogPath != "" && !filepath.IsAbs(spec.LogPath) {
		return bad("LogPath %q must be an absolute path", spec.LogPath)
	}
	for _, m := range spec.Mounts {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return bad("mount %q -> %q: source and target must be absolute paths", m.Source, m.Target)
		}
	}
	for _, kv := range spec.Env {
		if i := strings.IndexByte(kv, '='); i <= 0 {
			return bad("environment entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

// prepareDir creates the state folder and its fixed parts and returns its path
// with symbolic links resolved.
func prepareDir(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the state folder: %w", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("resolve the state folder %s: %w", dir, err)
	}
	for _, sub := range []string{"upper", "work", "rootfs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(real, sub), 0o700); err != nil {
			return "", fmt.Errorf("create the state folder: %w", err)
		}
	}
	// The container's /tmp.
	if err := os.Chmod(filepath.Join(real, "tmp"), os.ModePerm|os.ModeSticky); err != nil {
		return "", fmt.Errorf("create the state folder: %w", err)
	}
	return real, nil
}

func toGroups(gs []uint32) []uint32 {
	if len(gs) == 0 {
		return []uint32{}
	}
	return append([]uint32(nil), gs...)
}

func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		kv := env[i]
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:], true
		}
	}
	return "", false
}

// PID is the program's process ID (it leads its own process group).
func (p *Process) PID() int { return p.pid }

// StartedAt is when the program started.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// Done is closed when the program has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit reports how the program ended; valid once Done is closed.
func (p *Process) Exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exit
}

// Signal sends sig to the program's whole process group.
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalLocked(sig)
}

func (p *Process) signalLocked(sig syscall.Signal) error {
	if p.reaped {
		return fmt.Errorf("container %s: signal %v: %w", p.id, sig, ErrExited)
	}
	if err := syscall.Kill(-p.pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("container %s: signal %v: %w", p.id, sig, ErrExited)
		}
		return fmt.Errorf("container %s: signal %v to process group %d: %w", p.id, sig, p.pid, err)
	}
	return nil
}

// Stop sends SIGTERM, waits up to grace for the exit, then SIGKILL, and returns the exit.
func (p *Process) Stop(ctx context.Context, grace time.Duration) Exit {
	select {
	case <-p.done:
		return p.Exit()
	default:
	}
	p.mu.Lock()
	_ = p.signalLocked(syscall.SIGTERM)
	if p.paused {
		// A stopped process would only see SIGTERM once thawed.
		_ = p.signalLocked(syscall.SIGCONT)
		p.paused = false
	}
	p.mu.Unlock()

	if grace > 0 {
		t := time.NewTimer(grace)
		select {
		case <-p.done:
			t.Stop()
			return p.Exit()
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	p.kill()
	<-p.done
	return p.Exit()
}

// kill sends SIGKILL to the process group and to every other process of the
// container (the reaper sweeps again once the program is gone).
func (p *Process) kill() {
	p.mu.Lock()
	_ = p.signalLocked(syscall.SIGKILL)
	p.mu.Unlock()
	p.sweep()
}

// sweep kills every process in the container's mount namespace, while it is held.
func (p *Process) sweep() {
	p.nsMu.RLock()
	defer p.nsMu.RUnlock()
	if p.nsFile != nil && !p.mntNS.zero() {
		killNamespace(p.mntNS)
	}
}

// releaseNamespace drops the hold on the mount namespace (after the last sweep).
func (p *Process) releaseNamespace() {
	p.nsMu.Lock()
	defer p.nsMu.Unlock()
	if p.nsFile != nil {
		_ = p.nsFile.Close()
		p.nsFile = nil
	}
}

// Pause freezes the process group (SIGSTOP); Resume thaws it (SIGCONT).
//
// A paused process shows state T, except one that waits for a child it forked
// with vfork (as dash does for every command) while that child was stopped
// before its exec: the parent stays in D (uninterruptible, in kernel_clone) with
// its stop pending until Resume lets the child exec. It makes no progress either.
func (p *Process) Pause() error { return p.setPaused(syscall.SIGSTOP, true) }

// Resume thaws a paused process group.
func (p *Process) Resume() error { return p.setPaused(syscall.SIGCONT, false) }

// setPaused sends sig to the process group and records whether it is paused.
func (p *Process) setPaused(sig syscall.Signal, paused bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.signalLocked(sig); err != nil {
		return err
	}
	p.paused = paused
	return nil
}

// Paused reports whether the process is paused.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

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
	return p.exec(ctx, opts)
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
	return readLogs(ctx, path, opts, w)
}

// Init runs the shim when the current process was re-executed as one and never
// returns in that case; otherwise it returns false at once. Call it first in main
// and in TestMain of any test that starts containers.
func Init() bool { return reexec.Init() }

func init() {
	// The shim's entry point; reexec.Init dispatches on os.Args[0].
	reexec.Register(shimName, shimMain)
}

// nsID identifies a namespace (the nsfs device and inode of /proc/PID/ns/X).
type nsID struct{ dev, ino uint64 }

func (n nsID) zero() bool { return n == nsID{} }

// holdNamespace opens a process's namespace so it outlives the process while the
// file is open, and returns its identity.
func holdNamespace(pid int, kind string) (*os.File, nsID, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/" + kind)
	if err != nil {
		return nil, nsID{}, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, nsID{}, err
	}
	return f, nsID{dev: st.Dev, ino: st.Ino}, nil
}

func namespaceOf(pid int, kind string) (nsID, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/"+strconv.Itoa(pid)+"/ns/"+kind, &st); err != nil {
		return nsID{}, err
	}
	return nsID{dev: st.Dev, ino: st.Ino}, nil
}

// killNamespace SIGKILLs every process in the mount namespace ns until none is
// left: rounds catch processes forked meanwhile, and a killed process stays
// in the namespace until it has exited, which on a loaded host can take far
// longer than a few rounds (the last CI-like run found one left after 20
// rounds, ≈ 0.2 s). It gives up after killNamespaceFor.
func killNamespace(ns nsID) {
	if ns.zero() || ns == ownMountNS() {
		return // never the harness's own (host) namespace
	}
	self := os.Getpid()
	deadline := time.Now().Add(killNamespaceFor)
	for round := 0; round == 0 || time.Now().Before(deadline); round++ {
		d, err := os.Open("/proc")
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(-1)
		_ = d.Close()
		found := 0
		for _, name := range names {
			pid, err := strconv.Atoi(name)
			if err != nil || pid <= 1 || pid == self {
				continue
			}
			if id, err := namespaceOf(pid, "mnt"); err == nil && id == ns {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				found++
			}
		}
		if found == 0 {
			return
		}
		time.Sleep(time.Duration(min(round+1, 20)) * time.Millisecond)
	}
}

// killNamespaceFor bounds killNamespace: long enough for killed processes to
// exit on a loaded host, short enough that a process stuck in the kernel
// (D state) does not hold a container's teardown for ever.
const killNamespaceFor = 10 * time.Second
