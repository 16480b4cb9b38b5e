// Package coredns runs a cluster's DNS: CoreDNS, built from its pinned module
// (`make coredns`), as a child process of the cluster's owner, with the
// kubernetes plugin serving the cluster domain from the API server and every
// other name answered NXDOMAIN at once (this machine has no upstream resolver
// to forward to).
package coredns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gauntlet-dev/gauntlet/cluster/internal/deathsig"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// ErrExited is reported when CoreDNS ends while the cluster runs.
var ErrExited = errors.New("coredns exited")

// Config describes one cluster's DNS server.
type Config struct {
	// Binary is the coredns program (see FindBinary). Required.
	Binary string
	// Dir is the state folder: Corefile, coredns.log and pids/ go here. Required.
	Dir string
	// Listen is where DNS is served, UDP and TCP (see PickPort). Required.
	Listen netip.AddrPort
	// Kubeconfig is a kubeconfig whose user may list and watch Services,
	// EndpointSlices, Namespaces and Pods. Required.
	Kubeconfig string
	// Domain is the cluster domain (default "cluster.local").
	Domain string
	// Log receives progress and a CoreDNS failure (default: discarded).
	Log *slog.Logger
}

// Server is a running CoreDNS.
type Server struct {
	cfg      Config
	cmd      *exec.Cmd
	logPath  string
	pidPath  string
	readyURL string
	done     chan struct{}
	failed   chan error
	mu       sync.Mutex
	stopped  bool
}

// Start writes the Corefile and starts CoreDNS with SIGKILL as its
// parent-death signal and a PID record under cfg.Dir (so GC finds it). It does
// not wait for CoreDNS to serve: see WaitReady.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Binary == "" || cfg.Dir == "" || !cfg.Listen.IsValid() || cfg.Kubeconfig == "" {
		return nil, errors.New("coredns: Config needs Binary, Dir, Listen and Kubeconfig")
	}
	if cfg.Domain == "" {
		cfg.Domain = "cluster.local"
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("coredns: %w", err)
	}
	healthPort, err := freeTCPPort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	readyPort, err := freeTCPPort("127.0.0.1")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(cfg.Dir, "Corefile")
	body := Corefile(cfg.Listen, cfg.Domain, cfg.Kubeconfig, healthPort, readyPort)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("coredns: write %s: %w", conf, err)
	}
	s := &Server{
		cfg:      cfg,
		logPath:  filepath.Join(cfg.Dir, "coredns.log"),
		pidPath:  filepath.Join(cfg.Dir, "pids", "coredns"+pidfile.Suffix),
		readyURL: "http://127.0.0.1:" + strconv.Itoa(readyPort) + "/ready",
		done:     make(chan struct{}),
		failed:   make(chan error, 1),
	}
	f, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("coredns: %w", err)
	}
	defer f.Close()
	cmd := exec.Command(cfg.Binary, "-conf", conf)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Dies with the cluster's owner, even a SIGKILLed one, like the control plane.
	if err := deathsig.Start(cmd); err != nil {
		return nil, fmt.Errorf("coredns: start %s: %w", cfg.Binary, err)
	}
	s.cmd = cmd
	if err := pidfile.Write(s.pidPath, cmd.Process.Pid); err != nil {
		cfg.Log.Warn("cannot record the CoreDNS PID", "err", err)
	}
	cfg.Log.Debug("started", "component", "coredns", "pid", cmd.Process.Pid, "listen", cfg.Listen)
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		close(s.done)
		_ = os.Remove(s.pidPath)
		if !stopped {
			e := fmt.Errorf("%w (%v); last log lines from %s:\n%s", ErrExited, err, s.logPath, tail(s.logPath, 15))
			cfg.Log.Error("coredns exited", "err", err, "log", s.logPath)
			s.failed <- e
		}
	}()
	return s, nil
}

// Corefile renders the configuration: the cluster domain and the reverse zones
// from the kubernetes plugin (pod records without checking the pod exists, as
// kubeadm's default does), every other name NXDOMAIN.
func Corefile(listen netip.AddrPort, domain, kubeconfig string, healthPort, readyPort int) string {
	var b strings.Builder
	port := strconv.Itoa(int(listen.Port()))
	fmt.Fprintf(&b, "%s:%s in-addr.arpa:%s ip6.arpa:%s {\n", domain, port, port, port)
	fmt.Fprintf(&b, "    bind %s\n", listen.Addr())
	b.WriteString("    errors\n")
	fmt.Fprintf(&b, "    health 127.0.0.1:%d\n", healthPort)
	fmt.Fprintf(&b, "    ready 127.0.0.1:%d\n", readyPort)
	b.WriteString("    kubernetes {\n")
	fmt.Fprintf(&b, "        kubeconfig %s\n", kubeconfig)
	b.WriteString("        pods insecure\n")
	b.WriteString("        ttl 30\n")
	b.WriteString("    }\n")
	b.WriteString("    cache 30\n")
	b.WriteString("    loadbalance\n")
	b.WriteString("}\n")
	b.WriteString("# No upstream resolver is reachable from here: names outside the cluster do not exist.\n")
	fmt.Fprintf(&b, ".:%s {\n", port)
	fmt.Fprintf(&b, "    bind %s\n", listen.Addr())
	b.WriteString("    errors\n")
	b.WriteString("    template ANY ANY {\n")
	b.WriteString("        rcode NXDOMAIN\n")
	b.WriteString("    }\n")
	b.WriteString("}\n")
	return b.String()
}

// WaitReady waits until CoreDNS's ready plugin answers 200: it listens and its
// kubernetes plugin has synced with the API server.
func (s *Server) WaitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	last := "no answer yet"
	for {
		resp, err := client.Get(s.readyURL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case err := <-s.failed:
			s.failed <- err // still reported through Failed
			return fmt.Errorf("coredns: never became ready: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("coredns: waiting until ready: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("coredns: not ready after 60s (last answer: %s); see %s", last, s.logPath)
		}
	}
}

// Failed delivers an error when CoreDNS exits without being stopped.
func (s *Server) Failed() <-chan error { return s.failed }

// PID is the CoreDNS process's ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Listen is where DNS is served.
func (s *Server) Listen() netip.AddrPort { return s.cfg.Listen }

// Stop ends CoreDNS: SIGTERM, then SIGKILL after a short grace or when ctx ends.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-s.done:
		return nil
	case <-time.After(3 * time.Second):
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-s.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("coredns: pid %d did not exit after SIGKILL", pid)
	}
}

// PickPort returns the port to serve DNS on at addr: 53 when both its UDP and
// TCP sockets are free there (as on a real cluster), else another port free for both.
func PickPort(addr netip.Addr) (uint16, error) {
	if bothFree(addr, 53) {
		return 53, nil
	}
	for range 20 {
		p, err := freeTCPPort(addr.String())
		if err != nil {
			return 0, err
		}
		if bothFree(addr, uint16(p)) {
			return uint16(p), nil
		}
	}
	return 0, fmt.Errorf("coredns: no port on %s is free for both UDP and TCP", addr)
}

func bothFree(addr netip.Addr, port uint16) bool {
	ap := netip.AddrPortFrom(addr, port).String()
	t, err := net.Listen("tcp", ap)
	if err != nil {
		return false
	}
	defer t.Close()
	u, err := net.ListenPacket("udp", ap)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

func freeTCPPort(addr string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		return 0, fmt.Errorf("coredns: find a free port on %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
