package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/testio"
)

func TestMain(m *testing.M) {
	// The test binary doubles as the shim.
	if Init() {
		return
	}
	if dir := os.Getenv(envHarness); dir != "" {
		os.Exit(harnessMain(dir)) // see TestDieWithHarness
	}
	os.Exit(m.Run())
}

// Paths that must never appear on the host.
const (
	hostTestDir     = "/gauntlet-test-xyz"
	testBasePattern = "gauntlet-container-test-"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "containers need root (mount, UTS and network namespaces); run the tests as root")
	}
}

// testBase makes a state root under /var/lib (like the harness's), removed at
// the end; it also checks that no mount under it or at the test paths leaked
// into the host's mount table.
func testBase(t testing.TB) string {
	t.Helper()
	requireRoot(t)
	base, err := os.MkdirTemp("/var/lib", testBasePattern)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Error(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, base) || strings.Contains(line, hostTestDir) {
				t.Errorf("mount left on the host: %s", line)
			}
		}
		if _, err := os.Lstat(hostTestDir); err == nil {
			t.Errorf("%s appeared on the host", hostTestDir)
		}
		if err := os.RemoveAll(base); err != nil {
			t.Error(err)
		}
	})
	return base
}

func newSpec(base, name string, argv ...string) Spec {
	return Spec{
		ID:      name,
		Dir:     filepath.Join(base, name),
		LogPath: filepath.Join(base, name+".log"),
		Argv:    argv,
		Env:     []string{"PATH=/usr/local/bin:/usr/bin:/bin", "MYVAR=container"},
	}
}

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// start starts spec and registers a clean-up that stops the container and checks
// that nothing of it is left.
func start(t testing.TB, spec Spec) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Start(ctx, spec)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pin(p)
	t.Cleanup(func() { stopAndCheck(t, p) })
	return p
}

// pins holds, per started container, a duplicate of its mount-namespace file:
// a namespace's inode number is reused as soon as the namespace is freed, so
// without the pin the check after Stop counted processes of another
// container (of a test running beside it) that got the same number.
var pins sync.Map // *Process → int (fd)

func pin(p *Process) {
	p.nsMu.RLock()
	defer p.nsMu.RUnlock()
	if p.nsFile == nil {
		return // already gone: nothing to pin, nothing to count
	}
	if fd, err := unix.FcntlInt(p.nsFile.Fd(), unix.F_DUPFD_CLOEXEC, 0); err == nil {
		pins.Store(p, fd)
	}
}

func stopAndCheck(t testing.TB, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p.Stop(ctx, 0)
	select {
	case <-p.Done():
	case <-ctx.Done():
		t.Fatalf("container %s not reaped after Stop", p.id)
	}
	if fd, ok := pins.LoadAndDelete(p); ok {
		if n := countInNamespace(p.mntNS); n != 0 {
			t.Errorf("container %s: %d processes left in its mount namespace", p.id, n)
		}
		_ = unix.Close(fd.(int))
	}
	if _, err := os.Stat(p.pidPath); err == nil {
		t.Errorf("container %s: PID record %s left", p.id, p.pidPath)
	}
}

func countInNamespace(ns nsID) int {
	names, _ := filepath.Glob("/proc/[0-9]*")
	n := 0
	for _, name := range names {
		pid, _ := strconv.Atoi(filepath.Base(name))
		if id, err := namespaceOf(pid, "mnt"); err == nil && id == ns {
			n++
		}
	}
	return n
}

// waitLog waits until the CRI log at path contains want.
func waitLog(t testing.TB, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s never contained %q; it has:\n%s", path, want, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// run execs argv in p and returns stdout, stderr and the exit code.
func run(t testing.TB, p *Process, opts ExecOptions) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := p.Exec(ctx, opts)
	if err != nil {
		t.Fatalf("Exec %v: %v", opts.Argv, err)
	}
	return out.String(), errb.String(), code
}

func mustRun(t testing.TB, p *Process, argv ...string) string {
	t.Helper()
	out, errs, code := run(t, p, ExecOptions{Argv: argv})
	if code != 0 {
		t.Fatalf("Exec %v: exit code %d, stderr %q", argv, code, errs)
	}
	return out
}

func procField(t testing.TB, pid int, key string) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			return strings.Join(strings.Fields(v), " ")
		}
	}
	t.Fatalf("no %s in /proc/%d/status", key, pid)
	return ""
}

func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFilesystemView(t *testing.T) {
	base := testBase(t)
	vol := filepath.Join(base, "vol")
	writeFile(t, filepath.Join(vol, "data.txt"), "volume data")
	secret := filepath.Join(base, "secret")
	writeFile(t, filepath.Join(secret, "token"), "s3cret")
	conf := filepath.Join(base, "valkey.conf")
	writeFile(t, conf, "port 6379")
	hostVersion, err := os.ReadFile("/etc/debian_version")
	if err != nil {
		testenv.Unavailable(t, "the test bind-mounts over /etc/debian_version, which this host lacks")
	}
	for _, p := range []string{"/etc/gauntlet-mount-test", "/run/secrets", "/etc/gauntlet-cow-test"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists on the host; the test needs it absent", p)
		}
	}

	spec := newSpec(base, "fs", sh("echo hello; echo err >&2; sleep 30")...)
	spec.Mounts = []Mount{
		{Source: vol, Target: hostTestDir + "/data"},
		{Source: secret, Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Source: conf, Target: "/etc/gauntlet-mount-test/valkey.conf"}, // a file, parent missing on the host
		{Source: conf, Target: "/etc/debian_version", ReadOnly: true},  // a file over a host file
	}
	p := start(t, spec)
	// The streams are copied independently: wait for each.
	waitLog(t, spec.LogPath, " stderr F err\n")
	waitLog(t, spec.LogPath, " stdout F hello\n")

	// The program itself sees the volume.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/root%s/data/data.txt", p.PID(), hostTestDir)); err != nil || string(b) != "volume data" {
		t.Errorf("program's view of the volume: %q, %v", b, err)
	}
	tests := []struct {
		name string
		argv []string
		want string // stdout
		code int
	}{
		{"volume", []string{"cat", hostTestDir + "/data/data.txt"}, "volume data", 0},
		{"secret through /var/run symlink", []string{"cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"}, "s3cret", 0},
		{"file mount with missing parent", []string{"cat", "/etc/gauntlet-mount-test/valkey.conf"}, "port 6379", 0},
		{"file over host file", []string{"cat", "/etc/debian_version"}, "port 6379", 0},
		{"read-only volume", sh("echo x > /run/secrets/kubernetes.io/serviceaccount/new"), "", 2},
		{"write to the copy-on-write root", sh("echo cow > /etc/gauntlet-cow-test && cat /etc/gauntlet-cow-test"), "cow\n", 0},
		{"write to a volume", sh("echo shared > " + hostTestDir + "/data/from-container"), "", 0},
		{"private tmp", sh("echo t > /tmp/gauntlet-tmp-test && ls /tmp"), "gauntlet-tmp-test\n", 0},
		{"state folder hidden", []string{"ls", "-A", spec.Dir}, "", 0},
		{"private /dev", sh("ls /dev | grep -c vda"), "0\n", 1},
		{"/proc/sys read-only", sh("echo 1 > /proc/sys/kernel/printk_ratelimit"), "", 2},
		{"/sys read-only", sh("echo 1 > /sys/kernel/profiling"), "", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, p, ExecOptions{Argv: tc.argv})
			if code != tc.code || out != tc.want {
				t.Errorf("got code %d stdout %q (stderr %q), want code %d stdout %q", code, out, errs, tc.code, tc.want)
			}
		})
	}

	// The host is unchanged; writes landed in the state folder or the volume.
	for _, path := range []string{hostTestDir, "/etc/gauntlet-mount-test", "/run/secrets", "/etc/gauntlet-cow-test", "/tmp/gauntlet-tmp-test"} {
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s appeared on the host", path)
		}
	}
	if b, _ := os.ReadFile("/etc/debian_version"); !bytes.Equal(b, hostVersion) {
		t.Errorf("host /etc/debian_version changed to %q", b)
	}
	if b, err := os.ReadFile(filepath.Join(spec.Dir, "upper/etc/gauntlet-cow-test")); err != nil || string(b) != "cow\n" {
		t.Errorf("copy-on-write layer: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(vol, "from-container")); err != nil {
		t.Errorf("write to the volume not on the host: %v", err)
	}
	if _, err := os.Stat(filepath.Join(spec.Dir, "tmp/gauntlet-tmp-test")); err != nil {
		t.Errorf("write to /tmp not in the state folder: %v", err)
	}
	stopAndCheck(t, p)
	if _, err := os.Lstat(hostTestDir); err == nil {
		t.Errorf("%s appeared on the host after the container ended", hostTestDir)
	}
}

func TestIdentity(t *testing.T) {
	base := testBase(t)
	// The container's own user database, mounted over the host's.
	passwd := filepath.Join(base, "passwd")
	writeFile(t, passwd, "root:x:0:0:root:/root:/bin/sh\ntester:x:1234:4321::/home/tester:/bin/sh\n")
	group := filepath.Join(base, "group")
	writeFile(t, group, "root:x:0:\ntesters:x:4321:\nextra:x:5555:other,tester\n")
	u := func(v uint32) *uint32 { return &v }

	tests := []struct {
		name       string
		uid, gid   *uint32
		groups     []uint32
		wantUID    string
		wantGID    string
		wantGroups string
		wantHome   string
	}{
		{"root", nil, nil, nil, "0", "0", "", "/root"},
		{"user, group and supplemental groups", u(1000), u(1000), []uint32{2000, 3000}, "1000", "1000", "2000 3000", "/"},
		{"user from passwd", u(1234), nil, []uint32{7000}, "1234", "4321", "5555 7000", "/home/tester"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(base, strings.ReplaceAll(tc.name, " ", "-"), sh("echo ready; sleep 30")...)
			spec.UID, spec.GID, spec.SupplementalGroups = tc.uid, tc.gid, tc.groups
			spec.Mounts = []Mount{{Source: passwd, Target: "/etc/passwd", ReadOnly: true}, {Source: group, Target: "/etc/group", ReadOnly: true}}
			p := start(t, spec)
			waitLog(t, spec.LogPath, "ready")
			ids := func(s string) string { return strings.Repeat(s+" ", 4)[:4*len(s)+3] }
			if got := procField(t, p.PID(), "Uid"); got != ids(tc.wantUID) {
				t.Errorf("Uid: %q, want %q", got, ids(tc.wantUID))
			}
			if got := procField(t, p.PID(), "Gid"); got != ids(tc.wantGID) {
				t.Errorf("Gid: %q, want %q", got, ids(tc.wantGID))
			}
			if tc.uid != nil {
				if got := procField(t, p.PID(), "Groups"); got != tc.wantGroups {
					t.Errorf("Groups: %q, want %q", got, tc.wantGroups)
				}
			}
			// Exec runs as the same user with the same groups and HOME.
			out := mustRun(t, p, "sh", "-c", `echo $(id -u) $(id -g) "$HOME"; cat /proc/self/status | grep ^Groups`)
			wantOut := fmt.Sprintf("%s %s %s\n", tc.wantUID, tc.wantGID, tc.wantHome)
			if !strings.HasPrefix(out, wantOut) {
				t.Errorf("exec identity: %q, want prefix %q", out, wantOut)
			}
			if tc.uid != nil && !strings.Contains(strings.Join(strings.Fields(out), " "), "Groups: "+tc.wantGroups) {
				t.Errorf("exec groups: %q, want %q", out, tc.wantGroups)
			}
			if out := mustRun(t, p, "sh", "-c", "touch /tmp/mine && ls /"); !strings.Contains(out, "usr\n") {
				t.Errorf("the user cannot list / : %q", out)
			}
		})
	}
}

func TestHostname(t *testing.T) {
	base := testBase(t)
	hostHostname, _ := os.Hostname()
	spec := newSpec(base, "hn", sh("hostname; sleep 30")...)
	spec.Hostname = "pod-a-0"
	p := start(t, spec)
	waitLog(t, spec.LogPath, "stdout F pod-a-0\n")
	if out := mustRun(t, p, "hostname"); out != "pod-a-0\n" {
		t.Errorf("exec hostname: %q", out)
	}
	if out := mustRun(t, p, "cat", "/etc/hostname"); out != "pod-a-0\n" {
		t.Errorf("/etc/hostname: %q", out)
	}
	if out := mustRun(t, p, "getent", "hosts", "pod-a-0"); !strings.Contains(out, "pod-a-0") {
		t.Errorf("the hostname does not resolve: %q", out)
	}
	if h, _ := os.Hostname(); h != hostHostname {
		t.Errorf("host hostname changed to %q", h)
	}
	if self, _ := namespaceOf(os.Getpid(), "uts"); self == mustNS(t, p.PID(), "uts") {
		t.Error("the container shares the host's UTS namespace")
	}
}

func mustNS(t testing.TB, pid int, kind string) nsID {
	t.Helper()
	id, err := namespaceOf(pid, kind)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestWorkingDir(t *testing.T) {
	base := testBase(t)
	tests := []struct{ dir, want string }{
		{"", "/"},
		{"/usr/share", "/usr/share"},
		{hostTestDir + "/work/dir", hostTestDir + "/work/dir"}, // created in the container only
	}
	for i, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			spec := newSpec(base, "wd"+strconv.Itoa(i), sh("pwd; sleep 30")...)
			spec.WorkingDir = tc.dir
			spec.UID = func(v uint32) *uint32 { return &v }(1000)
			p := start(t, spec)
			waitLog(t, spec.LogPath, "stdout F "+tc.want+"\n")
			if out := mustRun(t, p, "pwd"); out != tc.want+"\n" {
				t.Errorf("exec pwd: %q, want %q", out, tc.want)
			}
		})
	}
}

func TestStartErrors(t *testing.T) {
	base := testBase(t)
	file := filepath.Join(base, "afile")
	writeFile(t, file, "x")
	u := func(v uint32) *uint32 { return &v }
	tests := []struct {
		name   string
		modify func(*Spec)
		want   string
	}{
		{"missing program", func(s *Spec) { s.Argv = []string{"/nonexistent/prog"} }, "does not exist"},
		{"program not in PATH", func(s *Spec) { s.Argv = []string{"no-such-program-xyz"} }, "not found in PATH"},
		{"not executable", func(s *Spec) { s.Argv = []string{"/etc/passwd"} }, "permission denied"},
		{"missing volume source", func(s *Spec) {
			s.Mounts = []Mount{{Source: filepath.Join(base, "nope"), Target: "/data"}}
		}, "volume source"},
		{"file over folder", func(s *Spec) { s.Mounts = []Mount{{Source: file, Target: "/etc"}} }, "target is a folder"},
		{"folder over file", func(s *Spec) { s.Mounts = []Mount{{Source: base, Target: "/etc/passwd"}} }, "not a directory"},
		{"mount point in /proc", func(s *Spec) { s.Mounts = []Mount{{Source: base, Target: "/proc/gauntlet-x/y"}} }, "create the mount point"},
		{"bad network namespace", func(s *Spec) { s.NetNSPath = file }, "network namespace"},
		{"missing network namespace", func(s *Spec) { s.NetNSPath = filepath.Join(base, "nons") }, "network namespace"},
		{"working dir is a file", func(s *Spec) { s.WorkingDir = "/etc/passwd" }, "not a folder"},
		{"working dir not accessible", func(s *Spec) { s.WorkingDir = "/root"; s.UID = u(1000) }, "permission denied"},
		{"relative Dir", func(s *Spec) { s.Dir = "relative" }, "absolute"},
		{"empty Argv", func(s *Spec) { s.Argv = nil }, "Argv is empty"},
		{"relative mount target", func(s *Spec) { s.Mounts = []Mount{{Source: file, Target: "etc/x"}} }, "absolute"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "working dir not accessible" {
				if fi, err := os.Stat("/root"); err != nil || fi.Mode().Perm()&0o001 != 0 {
					testenv.Unavailable(t, "/root is accessible to others on this host: the test needs a folder others cannot enter")
				}
			}
			spec := newSpec(base, "err"+strconv.Itoa(i), "/bin/true")
			tc.modify(&spec)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, err := Start(ctx, spec)
			if err == nil {
				stopAndCheck(t, p)
				t.Fatalf("Start succeeded, want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if filepath.IsAbs(spec.Dir) {
				if _, err := os.Stat(filepath.Join(spec.Dir, "container"+pidfile.Suffix)); err == nil {
					t.Error("PID record left after a failed start")
				}
			}
		})
	}
}

func TestStartCancelled(t *testing.T) {
	base := testBase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Start(ctx, newSpec(base, "c", "/bin/true")); !errors.Is(err, context.Canceled) {
		t.Errorf("Start with a cancelled context: %v", err)
	}
}

func TestExit(t *testing.T) {
	base := testBase(t)
	tests := []struct {
		name   string
		script string
		signal syscall.Signal // sent once "ready" is logged
		want   Exit
	}{
		{"success", "exit 0", 0, Exit{Code: 0, Reason: "Completed"}},
		{"failure", "exit 3", 0, Exit{Code: 3, Reason: "Error"}},
		{"killed by itself", "kill -KILL $$", 0, Exit{Code: 137, Signal: syscall.SIGKILL, Reason: "Error"}},
		{"terminated by Signal", "echo ready; exec sleep 30", syscall.SIGTERM, Exit{Code: 143, Signal: syscall.SIGTERM, Reason: "Error"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(base, "exit"+strconv.Itoa(i), sh(tc.script)...)
			p := start(t, spec)
			if tc.signal != 0 {
				waitLog(t, spec.LogPath, "ready")
				if err := p.Signal(tc.signal); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-p.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the program did not end")
			}
			got := p.Exit()
			if got.Code != tc.want.Code || got.Signal != tc.want.Signal || got.Reason != tc.want.Reason {
				t.Errorf("Exit %+v, want %+v", got, tc.want)
			}
			if got.FinishedAt.Before(p.StartedAt()) {
				t.Errorf("FinishedAt %v before StartedAt %v", got.FinishedAt, p.StartedAt())
			}
			if err := p.Signal(syscall.SIGTERM); !errors.Is(err, ErrExited) {
				t.Errorf("Signal after the exit: %v, want ErrExited", err)
			}
			if _, err := p.Exec(context.Background(), ExecOptions{Argv: []string{"true"}}); !errors.Is(err, ErrExited) {
				t.Errorf("Exec after the exit: %v, want ErrExited", err)
			}
		})
	}
}

func TestStop(t *testing.T) {
	base := testBase(t)
	tests := []struct {
		name   string
		script string
		pause  bool
		grace  time.Duration
		want   Exit
		// minTime: a program that ignores TERM gets its full grace. No upper
		// bound: the exit code and the log tell TERM from the final SIGKILL.
		minTime time.Duration
		wantLog string
	}{
		{"traps TERM", "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done", false, 10 * time.Second,
			Exit{Code: 0, Reason: "Completed"}, 0, "got-term"},
		{"ignores TERM", "trap '' TERM; echo ready; while :; do sleep 0.05; done", false, 500 * time.Millisecond,
			Exit{Code: 137, Signal: syscall.SIGKILL, Reason: "Error"}, 500 * time.Millisecond, ""},
		{"paused, traps TERM", "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.05; done", true, 10 * time.Second,
			Exit{Code: 0, Reason: "Completed"}, 0, "got-term"},
		{"no grace", "trap '' TERM; echo ready; while :; do sleep 0.05; done", false, 0,
			Exit{Code: 137, Signal: syscall.SIGKILL, Reason: "Error"}, 0, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := newSpec(base, "stop"+strconv.Itoa(i), sh(tc.script)...)
			p := start(t, spec)
			waitLog(t, spec.LogPath, "ready")
			if tc.pause {
				if err := p.Pause(); err != nil {
					t.Fatal(err)
				}
			}
			t0 := time.Now()
			got := p.Stop(context.Background(), tc.grace)
			took := time.Since(t0)
			if got.Code != tc.want.Code || got.Signal != tc.want.Signal || got.Reason != tc.want.Reason {
				t.Errorf("Stop: %+v, want %+v", got, tc.want)
			}
			if took < tc.minTime {
				t.Errorf("Stop took %v, want at least the grace %v", took, tc.minTime)
			}
			if tc.wantLog != "" {
				waitLog(t, spec.LogPath, tc.wantLog)
			}
			if p.Paused() {
				t.Error("Paused after Stop")
			}
		})
	}
}

func TestPauseResume(t *testing.T) {
	base := testBase(t)
	// Each round appends a byte to /tmp/progress (the container's /tmp is
	// Dir/tmp) and forks a sleep: dash forks with vfork, so a pause can catch the
	// shell waiting in D for a child stopped before its exec.
	spec := newSpec(base, "pause", sh("echo ready; while :; do printf x >> /tmp/progress; sleep 0.05; done")...)
	progressPath := filepath.Join(spec.Dir, "tmp", "progress")
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	if pgid, err := syscall.Getpgid(p.PID()); err != nil || pgid != p.PID() {
		t.Errorf("process group %d (%v), want the program's own (%d)", pgid, err, p.PID())
	}
	if pid, alive, err := pidfile.Alive(filepath.Join(spec.Dir, "container"+pidfile.Suffix)); err != nil || !alive || pid != p.PID() {
		t.Errorf("PID record: %d alive=%v err=%v, want %d alive", pid, alive, err, p.PID())
	}
	progress := func() int64 {
		fi, err := os.Stat(progressPath)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	// until polls cond; the deadline only bounds a failing test.
	until := func(cond func() bool, what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			select {
			case <-p.Done():
				t.Fatalf("process exited (%+v) while waiting for %s", p.Exit(), what)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("never %s; the group's states: %v", what, groupStates(p.PID()))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	until(func() bool { return progress() > 0 }, "made progress before the pause")

	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if !p.Paused() {
		t.Error("Paused() false after Pause")
	}
	until(func() bool { return groupStopped(p.PID()) }, "stopped every process of the group")
	// Stopped must mean no progress: watch for a few dozen rounds' time.
	before := progress()
	for range 20 {
		time.Sleep(25 * time.Millisecond)
		if now := progress(); now != before {
			t.Fatalf("the paused container made progress (%d -> %d bytes); the group's states: %v", before, now, groupStates(p.PID()))
		}
	}

	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if p.Paused() {
		t.Error("Paused() true after Resume")
	}
	until(func() bool { return progress() > before }, "made progress after Resume")
	if s := procState(p.PID()); s == "T" {
		t.Errorf("process state %q after Resume and progress", s)
	}
}

// groupStates maps each process of process group pgid to its state.
func groupStates(pgid int) map[int]string {
	out := map[int]string{}
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, name := range names {
		pid, _ := strconv.Atoi(filepath.Base(name))
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			out[pid] = procState(pid)
		}
	}
	return out
}

// groupStopped reports whether every process of group pgid is stopped: in state
// T, or in D waiting for a child of the group that is stopped (a vfork parent
// whose child was stopped before its exec: its own stop stays pending).
func groupStopped(pgid int) bool {
	states := groupStates(pgid)
	if len(states) == 0 {
		return false
	}
	stoppedChild := map[int]bool{} // parent PID -> has a stopped child in the group
	for pid, st := range states {
		if st == "T" {
			stoppedChild[procPPID(pid)] = true
		}
	}
	for pid, st := range states {
		switch {
		case st == "T":
		case st == "D" && stoppedChild[pid]:
		default:
			return false
		}
	}
	return true
}

func procPPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func TestExec(t *testing.T) {
	base := testBase(t)
	vol := filepath.Join(base, "vol")
	writeFile(t, filepath.Join(vol, "f"), "in the volume")
	spec := newSpec(base, "exec", sh("echo ready; sleep 30")...)
	spec.Mounts = []Mount{{Source: vol, Target: hostTestDir}}
	spec.WorkingDir = "/usr"
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")

	tests := []struct {
		name       string
		opts       ExecOptions
		wantOut    string
		wantErrOut string
		wantCode   int
	}{
		{"output and exit code", ExecOptions{Argv: sh("echo out; echo err >&2; exit 7")}, "out\n", "err\n", 7},
		{"container environment", ExecOptions{Argv: sh("echo $MYVAR")}, "container\n", "", 0},
		{"own environment", ExecOptions{Argv: sh("echo $MYVAR"), Env: []string{"MYVAR=exec"}}, "exec\n", "", 0},
		{"stdin", ExecOptions{Argv: []string{"cat"}, Stdin: strings.NewReader("piped\n")}, "piped\n", "", 0},
		{"sees the volume", ExecOptions{Argv: []string{"cat", hostTestDir + "/f"}}, "in the volume", "", 0},
		{"working dir", ExecOptions{Argv: []string{"pwd"}}, "/usr\n", "", 0},
		{"signalled", ExecOptions{Argv: sh("kill -TERM $$")}, "", "", 143},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, p, tc.opts)
			if out != tc.wantOut || errs != tc.wantErrOut || code != tc.wantCode {
				t.Errorf("got %q %q %d, want %q %q %d", out, errs, code, tc.wantOut, tc.wantErrOut, tc.wantCode)
			}
		})
	}

	t.Run("same namespaces", func(t *testing.T) {
		out := mustRun(t, p, "sh", "-c", "readlink /proc/self/ns/mnt /proc/self/ns/net /proc/self/ns/uts")
		var want []string
		for _, kind := range []string{"mnt", "net", "uts"} {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", p.PID(), kind))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, l)
		}
		if strings.Fields(out) == nil || strings.Join(strings.Fields(out), " ") != strings.Join(want, " ") {
			t.Errorf("exec namespaces %q, want %q", out, want)
		}
	})

	t.Run("missing command", func(t *testing.T) {
		_, err := p.Exec(context.Background(), ExecOptions{Argv: []string{"/no/such/cmd"}})
		if err == nil {
			t.Fatal("Exec of a missing command succeeded")
		}
	})

	t.Run("context cancels", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		code, err := p.Exec(ctx, ExecOptions{Argv: []string{"sleep", "30"}})
		if !errors.Is(err, context.DeadlineExceeded) || code != 137 {
			t.Errorf("Exec: code %d, %v; want 137 and a deadline error", code, err)
		}
		// The command sleeps 30 s: returning well before proves the cancel ended it.
		if took := time.Since(t0); took > 15*time.Second {
			t.Errorf("cancelled Exec took %v: it waited for the command instead of killing it", took)
		}
	})

	t.Run("tty", func(t *testing.T) {
		resize := make(chan TermSize, 1)
		resize <- TermSize{Width: 100, Height: 40}
		var out bytes.Buffer
		code, err := p.Exec(context.Background(), ExecOptions{
			Argv: sh("test -t 0 && test -t 1 && echo is-a-tty; tty; sleep 0.3; stty size"), TTY: true,
			Stdout: &out, Resize: resize,
		})
		if err != nil || code != 0 {
			t.Fatalf("Exec: %d, %v (output %q)", code, err, out.String())
		}
		got := strings.ReplaceAll(out.String(), "\r\n", "\n")
		for _, want := range []string{"is-a-tty\n", "/dev/pts/", "40 100\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("TTY output %q lacks %q", got, want)
			}
		}
	})

	t.Run("tty stdin", func(t *testing.T) {
		var out bytes.Buffer
		code, err := p.Exec(context.Background(), ExecOptions{
			Argv: sh("read line; echo got:$line"), TTY: true, Stdout: &out, Stdin: strings.NewReader("typed\n"),
		})
		if err != nil || code != 0 || !strings.Contains(out.String(), "got:typed") {
			t.Errorf("Exec: %d, %v, output %q", code, err, out.String())
		}
	})

	t.Run("tty held by a background child", func(t *testing.T) {
		var out testio.Buffer
		t0 := time.Now()
		code, err := p.Exec(context.Background(), ExecOptions{
			Argv: sh("trap '' HUP; sleep 60 & echo bg"), TTY: true, Stdout: &out,
		})
		if err != nil || code != 0 || !strings.Contains(out.String(), "bg") {
			t.Errorf("Exec: %d, %v, output %q", code, err, out.String())
		}
		// The background child sleeps 60 s: returning well before proves Exec did not wait for it.
		if took := time.Since(t0); took > 30*time.Second {
			t.Errorf("Exec took %v: it waited for the background child", took)
		}
	})

	t.Run("background child holding the output", func(t *testing.T) {
		// Output pipes held by a daemon must not hold Exec up for long.
		t0 := time.Now()
		out, _, code := run(t, p, ExecOptions{Argv: sh("sleep 60 & echo started")})
		if code != 0 || out != "started\n" {
			t.Errorf("got %q %d", out, code)
		}
		// The background child sleeps 60 s: returning well before proves Exec did not wait for it.
		if took := time.Since(t0); took > 30*time.Second {
			t.Errorf("Exec took %v: it waited for the background child", took)
		}
	})
}

func TestNetworkNamespace(t *testing.T) {
	base := testBase(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		testenv.Unavailable(t, "unshare (util-linux, `make deps`) is needed to create a throwaway network namespace")
	}
	nsFile := filepath.Join(base, "netns")
	writeFile(t, nsFile, "")
	if out, err := exec.Command("unshare", "--net="+nsFile, "true").CombinedOutput(); err != nil {
		t.Fatalf("create a network namespace: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(nsFile, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the namespace: %v", err)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(nsFile, &st); err != nil {
		t.Fatal(err)
	}

	spec := newSpec(base, "net", sh("echo ready; sleep 30")...)
	spec.NetNSPath = nsFile
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	if got := mustNS(t, p.PID(), "net"); got.ino != st.Ino {
		t.Errorf("program's network namespace inode %d, want %d", got.ino, st.Ino)
	}
	// sysfs was mounted in the pod's namespace: only its loopback shows.
	if out := mustRun(t, p, "ls", "/sys/class/net"); out != "lo\n" {
		t.Errorf("/sys/class/net in the container: %q, want only lo", out)
	}
	if out := mustRun(t, p, "cat", "/proc/net/dev"); strings.Count(out, ":") != 1 {
		t.Errorf("/proc/net/dev shows other interfaces:\n%s", out)
	}
}

func TestLogsAcrossRestarts(t *testing.T) {
	base := testBase(t)
	logPath := filepath.Join(base, "shared.log")
	for i, word := range []string{"first", "second"} {
		spec := newSpec(base, "restart"+strconv.Itoa(i), sh("echo "+word+"; printf no-newline")...)
		spec.LogPath = logPath
		p := start(t, spec)
		<-p.Done()
	}
	var out bytes.Buffer
	if err := ReadLogs(context.Background(), logPath, LogOptions{Tail: -1}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "first\nno-newline\nsecond\nno-newline\n"; out.String() != want {
		t.Errorf("logs %q, want %q", out.String(), want)
	}
}

func TestConcurrentUse(t *testing.T) {
	base := testBase(t)
	const n = 4
	procs := make([]*Process, n)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range procs {
		wg.Go(func() {
			spec := newSpec(base, "conc"+strconv.Itoa(i), sh("echo ready; while :; do sleep 0.05; done")...)
			p, err := Start(context.Background(), spec)
			if err != nil {
				errs <- err
				return
			}
			pin(p) // as start does: stopAndCheck counts leftovers only in a pinned namespace
			procs[i] = p
		})
	}
	wg.Wait()
	for _, p := range procs {
		if p != nil {
			t.Cleanup(func() { stopAndCheck(t, p) })
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	errs = make(chan error, 100)
	for _, p := range procs {
		for j := 0; j < 3; j++ {
			wg.Go(func() {
				var out bytes.Buffer
				code, err := p.Exec(context.Background(), ExecOptions{Argv: []string{"echo", "hi"}, Stdout: &out})
				if err != nil || code != 0 || out.String() != "hi\n" {
					errs <- fmt.Errorf("exec: %d %v %q", code, err, out.String())
				}
			})
		}
		wg.Go(func() {
			_ = p.Pause()
			_ = p.Paused()
			_ = p.Resume()
			_ = p.Signal(syscall.SIGCONT)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, p := range procs {
		wg.Go(func() {
			p.Stop(context.Background(), time.Second)
			_ = p.Exit()
		})
	}
	wg.Wait()
}

func TestStateFolderReuse(t *testing.T) {
	base := testBase(t)
	spec := newSpec(base, "inuse", sh("echo ready; sleep 30")...)
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	if _, err := Start(context.Background(), spec); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Start in the same Dir: %v, want ErrAlreadyRunning", err)
	}
	mustRun(t, p, "sh", "-c", "echo kept > /etc/gauntlet-reuse-test")
	stopAndCheck(t, p)
	// A later instance in the same Dir keeps the filesystem changes.
	spec.Argv = []string{"cat", "/etc/gauntlet-reuse-test"}
	p = start(t, spec)
	<-p.Done()
	waitLog(t, spec.LogPath, "stdout F kept\n")
	if _, err := os.Stat("/etc/gauntlet-reuse-test"); err == nil {
		t.Error("/etc/gauntlet-reuse-test appeared on the host")
	}
}

// TestStateFolderUnderTmp: a Dir below the host's /tmp (which the container
// replaces with its own) works too.
func TestStateFolderUnderTmp(t *testing.T) {
	requireRoot(t)
	tmp := t.TempDir()
	vol := filepath.Join(tmp, "vol")
	writeFile(t, filepath.Join(vol, "f"), "vol")
	spec := newSpec(tmp, "c", sh("echo ready; sleep 30")...)
	spec.Mounts = []Mount{{Source: vol, Target: hostTestDir}}
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	if out := mustRun(t, p, "sh", "-c", "cat "+hostTestDir+"/f; ls -A /tmp"); out != "vol" {
		t.Errorf("got %q, want the volume's content and an empty /tmp", out)
	}
	stopAndCheck(t, p)
	if _, err := os.Lstat(hostTestDir); err == nil {
		t.Errorf("%s appeared on the host", hostTestDir)
	}
}

func BenchmarkStart(b *testing.B) {
	base := testBase(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		spec := newSpec(base, "bench"+strconv.Itoa(i), "/bin/true")
		p, err := Start(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		<-p.Done()
		if e := p.Exit(); e.Code != 0 {
			b.Fatalf("exit %+v", e)
		}
	}
}

func BenchmarkExec(b *testing.B) {
	base := testBase(b)
	p := start(b, newSpec(base, "bench", "/bin/sleep", "3600"))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		code, err := p.Exec(context.Background(), ExecOptions{Argv: []string{"/bin/true"}, Stdout: io.Discard})
		if err != nil || code != 0 {
			b.Fatalf("exec: %d %v", code, err)
		}
	}
}

func TestFollowRunningContainer(t *testing.T) {
	base := testBase(t)
	spec := newSpec(base, "follow", sh("for i in 1 2 3; do echo line$i; echo warn$i >&2; sleep 0.1; done; sleep 30")...)
	p := start(t, spec)
	waitLog(t, spec.LogPath, "line1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out testio.Buffer
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(ctx, spec.LogPath, LogOptions{Tail: -1, Follow: true, Timestamps: true}, &out)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "warn3\n") || !strings.Contains(out.String(), "line3\n") {
		if time.Now().After(deadline) {
			t.Fatalf("followed output %q lacks warn3", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("followed %d lines, want 6: %q", len(lines), lines)
	}
	for _, line := range lines {
		stamp, _, _ := strings.Cut(line, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil || at.Before(p.StartedAt().Add(-time.Second)) || at.After(time.Now()) {
			t.Errorf("line %q: bad timestamp (%v)", line, err)
		}
	}
}

func TestKillRecorded(t *testing.T) {
	base := testBase(t)
	spec := newSpec(base, "crashed", sh("echo ready; exec sleep 600")...)
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	// A daemon that left the container's process group.
	if _, errs, code := run(t, p, ExecOptions{Argv: sh("setsid sleep 600 </dev/null >/dev/null 2>&1 &")}); code != 0 {
		t.Fatalf("exec: %d %s", code, errs)
	}
	if n := countInNamespace(p.mntNS); n != 2 {
		t.Fatalf("%d processes in the container, want 2", n)
	}
	n, err := KillRecorded(base, 5*time.Second)
	if err != nil || n != 1 {
		t.Fatalf("KillRecorded: %d, %v; want 1 container", n, err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the container was not reaped")
	}
	if n := countInNamespace(p.mntNS); n != 0 {
		t.Errorf("%d processes left", n)
	}
	if n, err := KillRecorded(base, time.Second); err != nil || n != 0 {
		t.Errorf("second KillRecorded: %d, %v", n, err)
	}
}

func TestHostSubmounts(t *testing.T) {
	base := testBase(t)
	src := filepath.Join(base, "src")
	writeFile(t, filepath.Join(src, "file"), "on disk")
	tmpfsSrc := filepath.Join(base, "tmpfs")
	mounts := []struct {
		point, source, fstype string
		flags                 uintptr
		readOnly              bool
	}{
		{filepath.Join(base, "rw"), src, "", unix.MS_BIND, false},
		{filepath.Join(base, "ro"), src, "", unix.MS_BIND, true},
		{tmpfsSrc, "tmpfs", "tmpfs", 0, false},
	}
	for _, m := range mounts {
		if err := os.MkdirAll(m.point, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(m.source, m.point, m.fstype, m.flags, ""); err != nil {
			t.Fatalf("mount %s: %v", m.point, err)
		}
		t.Cleanup(func() {
			if err := unix.Unmount(m.point, unix.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", m.point, err)
			}
		})
		if m.readOnly {
			if err := unix.Mount("", m.point, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeFile(t, filepath.Join(tmpfsSrc, "hidden"), "in tmpfs")

	spec := newSpec(base, "sub", sh("echo ready; sleep 30")...)
	p := start(t, spec)
	waitLog(t, spec.LogPath, "ready")
	tests := []struct {
		name string
		argv []string
		want string
		code int
	}{
		{"writable disk mount is visible", []string{"cat", base + "/rw/file"}, "on disk", 0},
		{"writable disk mount is copy-on-write", sh("echo new > " + base + "/rw/new && cat " + base + "/rw/new"), "new\n", 0},
		{"read-only disk mount stays read-only", sh("echo x > " + base + "/ro/new2"), "", 2},
		{"tmpfs mounts are left out", []string{"ls", "-A", tmpfsSrc}, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := run(t, p, ExecOptions{Argv: tc.argv})
			if code != tc.code || out != tc.want {
				t.Errorf("got code %d stdout %q (stderr %q), want %d %q", code, out, errs, tc.code, tc.want)
			}
		})
	}
	for _, path := range []string{filepath.Join(src, "new"), filepath.Join(src, "new2")} {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s appeared on the host", path)
		}
	}
}

func TestNoGoroutineLeak(t *testing.T) {
	base := testBase(t)
	before := runtime.NumGoroutine()
	spec := newSpec(base, "leak", sh("echo ready; while :; do sleep 0.05; done")...)
	p, err := Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, spec.LogPath, "ready")
	for _, opts := range []ExecOptions{
		{Argv: []string{"echo", "hi"}, Stdout: io.Discard},
		{Argv: []string{"cat"}, Stdin: strings.NewReader("x"), Stdout: io.Discard, Stderr: io.Discard},
		{Argv: sh("stty size"), TTY: true, Stdout: io.Discard, Stdin: strings.NewReader(""), Resize: make(chan TermSize)},
	} {
		if _, err := p.Exec(context.Background(), opts); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	go func() { followed <- ReadLogs(ctx, spec.LogPath, LogOptions{Tail: -1, Follow: true}, io.Discard) }()
	_ = p.Pause()
	_ = p.Resume()
	p.Stop(context.Background(), time.Second)
	cancel()
	<-followed
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after the container ended, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
