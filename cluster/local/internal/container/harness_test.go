package container

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Environment of the child harness TestDieWithHarness starts and kills.
const (
	envHarness    = "GAUNTLET_CONTAINER_HARNESS"     // state folder: run harnessMain there
	envHarnessUID = "GAUNTLET_CONTAINER_HARNESS_UID" // the container's user, if set
)

// harnessMain plays a harness: it starts a container whose program forked a
// background child, runs a command in it with Exec, prints "READY PID" and
// waits to be killed.
func harnessMain(dir string) int {
	spec := newSpec(dir, "c", sh("sleep 600 & echo ready; exec sleep 601")...)
	if v := os.Getenv(envHarnessUID); v != "" {
		uid, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			fmt.Println("bad uid:", err)
			return 2
		}
		u := uint32(uid)
		spec.UID, spec.GID = &u, &u
	}
	p, err := Start(context.Background(), spec)
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	go func() {
		_, err := p.Exec(context.Background(), ExecOptions{Argv: sh("exec sleep 602"), Stdout: io.Discard, Stderr: io.Discard})
		fmt.Fprintln(os.Stderr, "exec ended:", err)
	}()
	fmt.Println("READY", p.PID())
	select {}
}

// The container's program and commands run by Exec die with the harness that
// started them, even a SIGKILLed one (their parent-death signal), also when the
// program runs as another user (the shim re-arms the signal after setuid). What
// the program forked is left to KillRecorded, which finds it by its root even
// though the program (whose PID record names it) is gone.
func TestDieWithHarness(t *testing.T) {
	for _, tc := range []struct {
		name string
		uid  string
	}{
		{"as root", ""},
		{"as another user", "65534"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := testBase(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), envHarness+"="+base, envHarnessUID+"="+tc.uid)
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killed := false
			t.Cleanup(func() {
				if !killed {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
				_, _ = KillRecorded(base, 5*time.Second)
			})
			line, _ := bufio.NewReader(out).ReadString('\n')
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "READY ")))
			if err != nil {
				t.Fatalf("the harness did not start its container: %q", line)
			}
			ns, err := namespaceOf(pid, "mnt")
			if err != nil {
				t.Fatal(err)
			}
			// All three: the program, its background child, the exec'd command.
			until(t, func() bool { return len(commandsIn(ns)) == 3 }, func() string {
				return fmt.Sprintf("the container runs %v, want sleep 600, 601 and 602", commandsIn(ns))
			})

			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			killed = true
			until(t, func() bool {
				c := commandsIn(ns)
				return len(c) == 1 && c[0] == "sleep 600"
			}, func() string {
				return fmt.Sprintf("after the harness was killed the container runs %v, want only the program's background child (sleep 600)", commandsIn(ns))
			})
			if n, err := KillRecorded(base, 5*time.Second); err != nil || n != 0 {
				t.Errorf("KillRecorded: %d live records, %v; want 0 (the program is gone)", n, err)
			}
			until(t, func() bool { return len(commandsIn(ns)) == 0 }, func() string {
				return fmt.Sprintf("after KillRecorded the container runs %v", commandsIn(ns))
			})
		})
	}
}

// commandsIn lists the command lines of the processes in mount namespace ns.
func commandsIn(ns nsID) []string {
	var out []string
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, name := range names {
		pid, _ := strconv.Atoi(filepath.Base(name))
		if id, err := namespaceOf(pid, "mnt"); err != nil || id != ns {
			continue
		}
		b, err := os.ReadFile(name + "/cmdline")
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		out = append(out, strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " ")))
	}
	return out
}

// until polls cond; its deadline only bounds a failing test.
func until(t *testing.T, cond func() bool, explain func() string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(explain())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
