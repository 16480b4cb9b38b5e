// Package valkeytest starts real Valkey (or Redis ≥ 7) server processes on
// loopback for tests: valkey-server when installed, else redis-server.
package valkeytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNoServer means neither valkey-server nor redis-server is installed.
var ErrNoServer = errors.New("neither valkey-server nor redis-server is on PATH: install one (apt-get install redis-server)")

// ServerBinary returns the path of valkey-server, else redis-server.
func ServerBinary() (string, error) {
	for _, name := range []string{"valkey-server", "redis-server"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoServer
}

// Server is a running server process.
type Server struct {
	Port int
	Dir  string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Addr is "127.0.0.1:port".
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Start starts a server in dir (created if needed) with extra arguments (e.g.
// "--requirepass", "x"). Persistence is off unless the arguments turn it on.
func Start(ctx context.Context, dir string, extra ...string) (*Server, error) {
	return start(ctx, dir, false, extra...)
}

// StartTLS starts a server that accepts only TLS on its port (the certificate
// files go in extra: --tls-cert-file, --tls-key-file, --tls-ca-cert-file, ...).
func StartTLS(ctx context.Context, dir string, extra ...string) (*Server, error) {
	return start(ctx, dir, true, extra...)
}

func start(ctx context.Context, dir string, tls bool, extra ...string) (*Server, error) {
	bin, err := ServerBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("server dir: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		portArgs := []string{"--port", strconv.Itoa(port)}
		if tls {
			portArgs = []string{"--port", "0", "--tls-port", strconv.Itoa(port)}
		}
		args := append(portArgs, "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "no",
			"--repl-diskless-sync-delay", "0", "--logfile", "")
		args = append(args, extra...)
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		log := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", bin, err)
		}
		s := &Server{Port: port, Dir: dir, cmd: cmd, log: log, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); close(s.done) }()
		if err := s.waitListening(ctx); err != nil {
			s.Kill()
			lastErr = fmt.Errorf("%w; log:\n%s", err, log.String())
			continue
		}
		return s, nil
	}
	return nil, lastErr
}

func (s *Server) waitListening(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("server exited at start")
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr(), 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("server not listening after 10s")
}

// Kill stops the server with SIGKILL and waits for it.
func (s *Server) Kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
}

// Log is what the server printed.
func (s *Server) Log() string { return s.log.String() }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// TempDir makes a fresh folder under base named after prefix.
func TempDir(base, prefix string) (string, error) {
	return os.MkdirTemp(base, filepath.Base(prefix)+"-")
}
