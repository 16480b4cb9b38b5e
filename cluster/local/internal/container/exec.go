package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// How Exec enters a running container without a helper process:
//
// setns(CLONE_NEWNS) is refused (EINVAL) to a thread that shares its filesystem
// information (root, cwd) with other threads, as every thread of a Go program
// does. But a thread may unshare that information (unshare(CLONE_FS)) and then
// join any mount namespace. So a goroutine locks itself to its thread, unshares
// CLONE_FS, joins the container's network, UTS and mount namespaces, chroots to
// the container's root (/proc/PID/root, opened before) and forks the command from
// there: the child inherits the thread's namespaces and root, and gets the
// container's user, groups and working directory through SysProcAttr. The
// goroutine never unlocks, so the Go runtime discards the altered thread when it
// ends, and the runtime never clones new threads from a locked one. It ends only
// once the command has exited (release): the command's parent-death signal
// (SIGKILL, so that it dies with a killed harness) fires when the thread that
// forked it exits. The main
// thread is the exception (it cannot be discarded, and /proc/PID/ns shows its
// namespaces for the whole process), so it is never used. The cost is a thread
// and a fork/exec: about two milliseconds.

// nsHandles are the open namespaces and root of a running container.
type nsHandles struct {
	net, uts, mnt, root int
}

func (h *nsHandles) close() {
	for _, fd := range []int{h.net, h.uts, h.mnt, h.root} {
		if fd > 0 {
			_ = unix.Close(fd)
		}
	}
}

// openNamespaces opens the program's namespaces, checking that the PID still
// belongs to the container (its mount namespace is the one recorded at start).
func (p *Process) openNamespaces() (*nsHandles, error) {
	h := &nsHandles{net: -1, uts: -1, mnt: -1, root: -1}
	base := "/proc/" + strconv.Itoa(p.pid) + "/"
	open := func(path string, flags int) (int, error) {
		fd, err := unix.Open(base+path, flags|unix.O_CLOEXEC, 0)
		if err != nil {
			h.close()
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
				return -1, ErrExited
			}
			return -1, fmt.Errorf("open %s%s: %w", base, path, err)
		}
		return fd, nil
	}
	var err error
	if h.mnt, err = open("ns/mnt", unix.O_RDONLY); err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.mnt, &st); err != nil || (nsID{dev: st.Dev, ino: st.Ino}) != p.mntNS {
		h.close()
		return nil, ErrExited
	}
	if h.net, err = open("ns/net", unix.O_RDONLY); err != nil {
		return nil, err
	}
	if h.uts, err = open("ns/uts", unix.O_RDONLY); err != nil {
		return nil, err
	}
	if h.root, err = open("root", unix.O_PATH|unix.O_DIRECTORY); err != nil {
		return nil, err
	}
	return h, nil
}

// startIn starts cmd inside the namespaces and root in h (see above), with
// SIGKILL as its parent-death signal; the forking thread lives until release is
// closed, which the caller does once the command has been waited for.
func startIn(h *nsHandles, cmd *exec.Cmd, release <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: this thread's namespaces and root are the container's
		// from here on, and it must not run any other goroutine.
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread is never discarded (the runtime wedges it instead),
			// and its namespaces are what /proc/PID/ns shows for the whole
			// process: keep it clean. Holding it, do the work on another thread.
			errc <- startIn(h, cmd, release)
			runtime.UnlockOSThread()
			return
		}
		err := func() error {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return fmt.Errorf("unshare the filesystem information: %w", err)
			}
			for _, ns := range []struct {
				fd   int
				kind int
				name string
			}{{h.net, unix.CLONE_NEWNET, "network"}, {h.uts, unix.CLONE_NEWUTS, "UTS"}, {h.mnt, unix.CLONE_NEWNS, "mount"}} {
				if err := unix.Setns(ns.fd, ns.kind); err != nil {
					return fmt.Errorf("join the container's %s namespace: %w", ns.name, err)
				}
			}
			if err := unix.Fchdir(h.root); err != nil {
				return fmt.Errorf("enter the container's root: %w", err)
			}
			if err := unix.Chroot("."); err != nil {
				return fmt.Errorf("enter the container's root: %w", err)
			}
			path, err := lookPath(cmd.Args[0], cmd.Env)
			if err != nil {
				return err
			}
			cmd.Path = path
			if cmd.SysProcAttr == nil {
				cmd.SysProcAttr = &syscall.SysProcAttr{}
			}
			cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
			return cmd.Start()
		}()
		errc <- err
		if err == nil {
			<-release
		}
	}()
	return <-errc
}

// exec implements Process.Exec.
func (p *Process) exec(ctx context.Context, opts ExecOptions) (code int, err error) {
	if len(opts.Argv) == 0 || opts.Argv[0] == "" {
		return -1, fmt.Errorf("container %s: exec: Argv is empty; set the command to run", p.id)
	}
	p.mu.Lock()
	reaped := p.reaped
	p.mu.Unlock()
	if reaped {
		return -1, fmt.Errorf("container %s: exec %s: %w", p.id, opts.Argv[0], ErrExited)
	}
	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("container %s: exec %s: %w", p.id, opts.Argv[0], err)
	}
	h, err := p.openNamespaces()
	if err != nil {
		return -1, fmt.Errorf("container %s: exec %s: %w", p.id, opts.Argv[0], err)
	}
	defer h.close()

	env := p.env
	if opts.Env != nil {
		env = opts.Env
	}
	cmd := &exec.Cmd{
		Args: opts.Argv,
		Env:  env,
		Dir:  p.workDir,
		SysProcAttr: &syscall.SysProcAttr{
			Credential: p.cred,
			// A session (and process group) of its own, killed as a whole on
			// ctx; with a TTY the terminal is its controlling terminal.
			Setsid:  true,
			Setctty: opts.TTY,
		},
	}
	streams, err := newExecIO(opts)
	if err != nil {
		return -1, fmt.Errorf("container %s: exec %s: %w", p.id, opts.Argv[0], err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = streams.child[0], streams.child[1], streams.child[2]

	release := make(chan struct{})
	defer close(release)
	err = startIn(h, cmd, release)
	streams.closeChildEnds()
	if err != nil {
		streams.closeParentEnds()
		return -1, fmt.Errorf("container %s: exec %s: %w", p.id, opts.Argv[0], err)
	}
	streams.run(opts)

	waited := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		select {
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			killed <- true
		case <-waited:
			killed <- false
		}
	}()
	_ = cmd.Wait()
	close(waited)
	wasKilled := <-killed
	streams.finish(drainTimeout)

	code = exitOf(cmd.ProcessState, time.Now()).Code
	if wasKilled {
		return code, fmt.Errorf("container %s: exec %s: killed: %w", p.id, opts.Argv[0], ctx.Err())
	}
	return code, nil
}

// execIO wires an exec's standard streams: pipes, or a pseudo-terminal.
type execIO struct {
	child   [3]*os.File // the command's stdin, stdout, stderr
	owned   []*os.File  // child ends to close after the start
	stdinW  *os.File    // nil: no stdin, or the TTY
	readers []*os.File  // output the copiers read (stdout, stderr, or the TTY master)
	ptm     *os.File    // the TTY master

	copiers sync.WaitGroup
	resizer sync.WaitGroup
	done    chan struct{}
	stop    chan struct{} // ends the resize loop
}

func newExecIO(opts ExecOptions) (*execIO, error) {
	x := &execIO{done: make(chan struct{}), stop: make(chan struct{})}
	if opts.TTY {
		ptm, pts, err := pty.Open()
		if err != nil {
			return nil, fmt.Errorf("allocate a terminal: %w", err)
		}
		if ptm, err = pollable(ptm); err != nil {
			_ = pts.Close()
			return nil, fmt.Errorf("allocate a terminal: %w", err)
		}
		x.ptm = ptm
		x.child = [3]*os.File{pts, pts, pts}
		x.owned = []*os.File{pts}
		x.readers = []*os.File{ptm}
		return x, nil
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	x.owned = append(x.owned, devnull)
	for i := range x.child {
		x.child[i] = devnull
	}
	if opts.Stdin != nil {
		r, w, err := os.Pipe()
		if err != nil {
			x.closeChildEnds()
			return nil, err
		}
		x.child[0], x.stdinW = r, w
		x.owned = append(x.owned, r)
	}
	for i, wr := range []io.Writer{opts.Stdout, opts.Stderr} {
		if wr == nil {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			x.closeChildEnds()
			x.closeParentEnds()
			return nil, err
		}
		x.child[i+1] = w
		x.owned = append(x.owned, w)
		x.readers = append(x.readers, r)
	}
	return x, nil
}

func (x *execIO) closeChildEnds() {
	for _, f := range x.owned {
		_ = f.Close()
	}
	x.owned = nil
}

func (x *execIO) closeParentEnds() {
	for _, f := range x.readers {
		_ = f.Close()
	}
	if x.stdinW != nil {
		_ = x.stdinW.Close()
	}
	if x.ptm != nil {
		_ = x.ptm.Close()
	}
}

// run starts the copying goroutines. The output copiers end at EOF (or when
// finish closes their readers). The stdin copier ends when opts.Stdin returns
// (EOF or error) or at its first write after the command ended: a Read blocked
// forever on the caller's reader is the caller's to end (close the stream).
func (x *execIO) run(opts ExecOptions) {
	if opts.TTY {
		out := opts.Stdout
		if out == nil {
			out = io.Discard // a command must not block on an unread terminal
		}
		x.copiers.Go(func() {
			_, _ = io.Copy(out, x.ptm) // ends with EIO once no process holds the terminal
		})
		if opts.Stdin != nil {
			go func() { _, _ = io.Copy(x.ptm, opts.Stdin) }()
		}
		if opts.Resize != nil {
			x.resizer.Go(func() {
				for {
					select {
					case <-x.stop:
						return
					case sz, ok := <-opts.Resize:
						if !ok {
							return
						}
						_ = setWinsize(x.ptm, sz)
					}
				}
			})
		}
	} else {
		if opts.Stdin != nil {
			go func() {
				_, _ = io.Copy(x.stdinW, opts.Stdin)
				_ = x.stdinW.Close() // the command sees EOF
			}()
		}
		outs := []io.Writer{opts.Stdout, opts.Stderr}
		k := 0
		for _, w := range outs {
			if w == nil {
				continue
			}
			r := x.readers[k]
			k++
			x.copiers.Go(func() {
				_, _ = io.Copy(w, r)
			})
		}
	}
	go func() {
		x.copiers.Wait()
		close(x.done)
	}()
}

// finish, once the command has exited, lets the output copiers drain (bounded by
// timeout: a background process may hold the streams open) and closes everything.
func (x *execIO) finish(timeout time.Duration) {
	close(x.stop)
	x.resizer.Wait()
	if x.stdinW != nil {
		_ = x.stdinW.Close()
	}
	t := time.NewTimer(timeout)
	select {
	case <-x.done:
	case <-t.C:
	}
	t.Stop()
	x.closeParentEnds()
	<-x.done
}

// pollable returns a copy of f that the Go runtime polls (pty.Open leaves the
// master in blocking mode, where Close cannot interrupt a pending Read).
func pollable(f *os.File) (*os.File, error) {
	defer func() { _ = f.Close() }()
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var ctlErr error
	if err := sc.Control(func(raw uintptr) {
		fd, ctlErr = unix.FcntlInt(raw, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if ctlErr != nil {
		return nil, ctlErr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// setWinsize resizes the terminal without switching f to blocking mode (as
// pty.Setsize does through File.Fd).
func setWinsize(f *os.File, sz TermSize) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Height, Col: sz.Width})
	}); err != nil {
		return err
	}
	return ioErr
}
