// Package valkeytest starts real Valkey-compatible servers (valkey-server, or
// Debian's redis-server) on loopback addresses for tests: the monitors', the
// bundled operator's and its state machine's. It is test support: nothing in the
// harness or the operator imports it outside tests.
package valkeytest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoServer means no server binary was found.
var ErrNoServer = errors.New("no valkey-server or redis-server binary (set GAUNTLET_VALKEY_SERVER, or install one: `make deps` installs valkey-server)")

// Binary returns the server binary to use: $GAUNTLET_VALKEY_SERVER, valkey-server
// or redis-server from PATH, or /usr/bin/redis-server; ErrNoServer when none exists.
func Binary() (string, error) {
	if b := os.Getenv("GAUNTLET_VALKEY_SERVER"); b != "" {
		if _, err := os.Stat(b); err == nil {
			return b, nil
		}
	}
	for _, name := range []string{"valkey-server", "redis-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	if _, err := os.Stat("/usr/bin/redis-server"); err == nil {
		return "/usr/bin/redis-server", nil
	}
	return "", ErrNoServer
}

// Options describe one server.
type Options struct {
	// Host is the loopback address to bind (default 127.0.0.1); any 127.x.y.z works on Linux.
	Host string
	// Port to listen on; 0 picks a free one.
	Port int
	// Dir holds the server's folder, Dir/<host>-<port>, with its files and log
	// (required; tests pass t.TempDir(), which several servers may share).
	Dir string
	// Config is a valkey.conf to start from, as a pod would. Without one the
	// server persists nothing and syncs replicas diskless at once.
	Config string
	// TLS makes Port the TLS port, with no plain port (the certificate files
	// go in Args: --tls-cert-file, --tls-key-file, --tls-ca-cert-file, ...).
	TLS bool
	// Args are extra arguments (e.g. "--replicaof", "127.0.0.1", "6379"); they
	// come last and win.
	Args []string
}

// Server is a running server process.
type Server struct {
	Host string
	Port int
	Addr string // Host:Port
	Dir  string // the server's folder
	Log  string // path of the server's log file

	cmd  *exec.Cmd
	done chan struct{}
}

// FreePort returns a TCP port that is free on every one of hosts at the time of the call.
func FreePort(hosts ...string) (int, error) {
	if len(hosts) == 0 {
		hosts = []string{"127.0.0.1"}
	}
	for range 50 {
		l, err := net.Listen("tcp", net.JoinHostPort(hosts[0], "0"))
		if err != nil {
			return 0, fmt.Errorf("find a free port on %s: %w", hosts[0], err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := true
		var held []net.Listener
		for _, h := range hosts[1:] {
			l2, err := net.Listen("tcp", net.JoinHostPort(h, strconv.Itoa(port)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l2)
		}
		for _, x := range held {
			x.Close()
		}
		l.Close()
		if ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no port free on all of %v", hosts)
}

// Start runs a server and waits until it answers (any reply to PING, so a server
// with requirepass counts as up; a TLS-only server once it accepts connections).
// The caller must Stop it. A free port taken by someone else meanwhile is
// retried with another.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("valkeytest: Options.Dir is required")
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	var lastErr error
	for range 5 {
		port := opts.Port
		if port == 0 {
			p, err := FreePort(opts.Host)
			if err != nil {
				return nil, err
			}
			port = p
		}
		s, err := start(ctx, bin, opts, port)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if opts.Port != 0 || ctx.Err() != nil {
			break // a fixed port: retrying would not help
		}
	}
	return nil, lastErr
}

func start(ctx context.Context, bin string, opts Options, port int) (*Server, error) {
	dir := filepath.Join(opts.Dir, fmt.Sprintf("%s-%d", opts.Host, port))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("server dir: %w", err)
	}
	logPath := filepath.Join(dir, "server.log")
	var args []string
	if opts.Config != "" {
		args = append(args, opts.Config)
	}
	if opts.TLS {
		args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port))
	} else {
		args = append(args, "--port", strconv.Itoa(port))
	}
	args = append(args, "--bind", opts.Host, "--dir", dir, "--logfile", logPath, "--daemonize", "no")
	if opts.Config == "" {
		args = append(args, "--save", "", "--appendonly", "no", "--protected-mode", "no", "--repl-diskless-sync-delay", "0")
	}
	args = append(args, opts.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	s := &Server{Host: opts.Host, Port: port, Addr: net.JoinHostPort(opts.Host, strconv.Itoa(port)), Dir: dir, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := s.answers(opts.TLS); err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s exited at start: %s", bin, s.Tail())
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("%s on %s did not answer within 10s: %s", bin, s.Addr, s.Tail())
		}
	}
}

// answers sends an inline PING and accepts any reply; a TLS port only has to
// accept the connection.
func (s *Server) answers(tls bool) error {
	c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	if tls {
		return nil
	}
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "-") {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Pause freezes the server (SIGSTOP): it keeps its sockets but answers nothing.
func (s *Server) Pause() error { return s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }

// Stop kills the server (SIGKILL, resuming it first if paused) and waits for it
// to exit. It is safe to call more than once.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
}

// Exited reports whether the process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Tail returns the last lines of the server's log (for test failure messages).
func (s *Server) Tail() string {
	b, err := os.ReadFile(s.Log)
	if err != nil {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return strings.Join(lines, "\n")
}
