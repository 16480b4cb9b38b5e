// Package deathsig starts child processes that the kernel kills (SIGKILL) as
// soon as the process that started them dies, however it dies: a harness killed
// with SIGKILL (a CI runner's timeout) leaves no control-plane or container
// process running.
//
// It relies on the parent-death signal (prctl PR_SET_PDEATHSIG, which os/exec
// sets from SysProcAttr.Pdeathsig). The kernel sends it when the *thread* that
// forked the child exits, not when the process does (prctl(2); golang/go#27505):
// the Go runtime ends a thread when a goroutine locked to it returns, and forks
// from whatever thread runs the calling goroutine. So Start forks every child
// from one goroutine that locks its OS thread and never returns: that thread
// lives exactly as long as the process, and the signal fires only when the
// process is gone.
//
// The signal is not inherited across fork (a child's own children do not get
// it) and the kernel clears it when the child changes its user or group IDs or
// executes a set-user-ID program; a child that does so sets it again itself
// (see Arm). Leftovers of that kind are for the caller's garbage collection.
package deathsig

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

type request struct {
	cmd  *exec.Cmd
	done chan error
}

// requests feeds the one spawning goroutine. It is process-wide by nature: the
// guarantee is about this process's threads.
var requests = make(chan request)

func init() {
	// Started here rather than on first use so that the goroutine exists before
	// anything counts goroutines (it is not a leak: it lives as long as the process).
	go spawner()
}

// spawner forks every child. It never returns, so its locked thread never exits
// while the process lives.
func spawner() {
	runtime.LockOSThread()
	for r := range requests {
		r.done <- r.cmd.Start()
	}
}

// Start starts cmd (as cmd.Start does) with SIGKILL as its parent-death signal,
// from a thread that lives as long as this process. It sets
// cmd.SysProcAttr.Pdeathsig, creating SysProcAttr if needed.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	requests <- request{cmd: cmd, done: done}
	return <-done
}

// Arm sets SIGKILL as the calling process's parent-death signal again (the
// kernel clears it on a change of user or group ID) and checks that the parent
// it had is still alive: parent is the parent's PID read before anything could
// have cleared the signal (os.Getppid at start). It is for a re-executed helper
// that drops privileges before it execs the real program.
func Arm(parent int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return fmt.Errorf("set the parent-death signal: %w", err)
	}
	if ppid := unix.Getppid(); ppid != parent {
		return fmt.Errorf("the parent process %d is gone (now %d): the harness that started this container died", parent, ppid)
	}
	return nil
}
