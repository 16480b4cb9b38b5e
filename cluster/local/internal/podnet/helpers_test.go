package podnet

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
)

func requireRoot(t testing.TB) {
	t.Helper()
	testenv.NeedRoot(t)
}

// testWriter sends slog output to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testConfig returns a config with a unique cluster name and a state folder;
// the CIDRs are filled in by newTestNetwork.
func testConfig(t testing.TB, name string) Config {
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, bench := t.(*testing.B); bench {
		log = slog.New(slog.DiscardHandler)
	}
	return Config{
		Name:     fmt.Sprintf("podnet-test-%d-%s", os.Getpid(), name),
		StateDir: t.TempDir(),
		Logger:   log,
	}
}

// newTestNetwork creates a network on the first free 10.251.X.0/24 (Service
// range 10.252.X.0/24), starting at a point derived from name so that tests
// and other clusters running at the same time rarely probe the same ranges.
// It closes the network at the end of the test and checks nothing is left.
func newTestNetwork(t testing.TB, name string) (*Network, Config) {
	t.Helper()
	requireRoot(t)
	cfg := testConfig(t, name)
	start := int(crc32.ChecksumIEEE([]byte(cfg.Name)) % 200)
	for i := range 200 {
		x := 40 + (start+i)%200 // 10.251.40.0 … 10.251.239.0
		cfg.CIDR = netip.MustParsePrefix(fmt.Sprintf("10.251.%d.0/24", x))
		cfg.ServiceCIDR = netip.MustParsePrefix(fmt.Sprintf("10.252.%d.0/24", x))
		n, err := Create(context.Background(), cfg)
		if errors.Is(err, ErrCIDROverlap) {
			continue
		}
		if err != nil {
			t.Fatalf("Create: %v", err)
		}
		t.Cleanup(func() {
			if err := n.Close(context.Background()); err != nil {
				t.Errorf("Close: %v", err)
			}
			assertNoLeftovers(t, cfg)
		})
		return n, cfg
	}
	t.Fatal("no free 10.251.X.0/24 range on this host")
	return nil, cfg
}

func mustAdd(t testing.TB, n *Network, id string) *Sandbox {
	t.Helper()
	sb, err := n.AddSandbox(context.Background(), id)
	if err != nil {
		t.Fatalf("AddSandbox(%q): %v", id, err)
	}
	return sb
}

// assertNoLeftovers checks that nothing of the cluster remains: no bridge, no
// veth with its prefix, no namespace file or folder, no mount under StateDir,
// no sandbox records.
func assertNoLeftovers(t testing.TB, cfg Config) {
	t.Helper()
	if _, err := netlink.LinkByName(bridgeName(cfg.Name)); !isLinkNotFound(err) {
		t.Errorf("bridge %s still exists (err=%v)", bridgeName(cfg.Name), err)
	}
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		t.Fatalf("list links: %v", err)
	}
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, vethNamePrefix(cfg.Name)) {
			t.Errorf("veth %s still exists", l.Attrs().Name)
		}
	}
	mps, err := mountPointsUnder(cfg.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(mps) > 0 {
		t.Errorf("mounts left under the state folder: %v", mps)
	}
	dirs := newStateDirs(cfg.StateDir)
	for _, p := range []string{dirs.netns, dirs.records} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (err=%v)", p, err)
		}
	}
}

// inNetNS runs fn on a fresh OS thread inside the namespace file at path (an
// empty path: in the host's namespace, on the calling goroutine). The thread is
// never unlocked, so it is discarded afterwards. Sockets fn creates stay in the
// namespace and may be used from any goroutine.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		ns, err := netns.GetFromPath(path)
		if err != nil {
			ch <- err
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			ch <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ch <- fn()
	}()
	return <-ch
}

// serveTCP listens on addr inside the namespace (host namespace if nsPath is
// empty) and answers every connection with "<name>\n", then closes it.
func serveTCP(t testing.TB, nsPath, addr, name string) netip.AddrPort {
	t.Helper()
	var ln net.Listener
	err := inNetNS(nsPath, func() (err error) {
		ln, err = net.Listen("tcp4", addr)
		return err
	})
	if err != nil {
		t.Fatalf("listen on %s in %q: %v", addr, nsPath, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s\n", name)
			c.Close()
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return netip.MustParseAddrPort(ln.Addr().String())
}

// serveUDP answers every datagram with "<name>".
func serveUDP(t testing.TB, nsPath, addr, name string) {
	t.Helper()
	var pc net.PacketConn
	err := inNetNS(nsPath, func() (err error) {
		pc, err = net.ListenPacket("udp4", addr)
		return err
	})
	if err != nil {
		t.Fatalf("listen udp on %s: %v", addr, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 1500)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(name), from)
		}
	})
	t.Cleanup(func() { pc.Close(); wg.Wait() })
}

// dialTimeout bounds connection attempts that are expected to be dropped;
// reachTimeout those expected to succeed, which must not fail because a
// loaded machine was slow (a first SYN lost to a port still coming up is
// resent after a second).
const (
	dialTimeout  = 400 * time.Millisecond
	reachTimeout = 15 * time.Second
)

// fetch connects from the namespace (host if nsPath is empty) to addr and
// returns the line the server sends.
func fetch(nsPath string, addr netip.AddrPort, timeout time.Duration) (string, error) {
	var c net.Conn
	err := inNetNS(nsPath, func() (err error) {
		c, err = net.DialTimeout("tcp4", addr.String(), timeout)
		return err
	})
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// exchangeUDP sends one datagram from the namespace and returns the answer.
func exchangeUDP(nsPath string, addr netip.AddrPort) (string, error) {
	var c net.Conn
	if err := inNetNS(nsPath, func() (err error) {
		c, err = net.Dial("udp4", addr.String())
		return err
	}); err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		return "", err
	}
	buf := make([]byte, 100)
	k, err := c.Read(buf)
	return string(buf[:k]), err
}

// expect describes how a connection attempt must end.
type expect int

const (
	reach   expect = iota // the server answers
	dropped               // the SYN is dropped: the dial times out (or EPERM)
	refused               // rejected: ECONNREFUSED
)

func (e expect) String() string {
	return [...]string{"reach", "dropped (timeout)", "refused (ECONNREFUSED)"}[e]
}

// checkConn connects and fails the test unless the outcome matches want
// (for reach, the answer must also be wantName when that is not empty).
func checkConn(t testing.TB, label, nsPath string, addr netip.AddrPort, want expect, wantName string) {
	t.Helper()
	timeout := dialTimeout
	if want == reach {
		timeout = reachTimeout
	}
	got, err := fetch(nsPath, addr, timeout)
	var outcome expect
	switch {
	case err == nil:
		outcome = reach
	case errors.Is(err, unix.EPERM), isTimeout(err):
		outcome = dropped
	case errors.Is(err, unix.ECONNREFUSED):
		outcome = refused
	default:
		t.Errorf("%s: connect to %s: unexpected error %v (want %v)", label, addr, err, want)
		return
	}
	if outcome != want {
		t.Errorf("%s: connect to %s: got %v (answer %q, err %v), want %v", label, addr, outcome, got, err, want)
		return
	}
	if want == reach && wantName != "" && got != wantName {
		t.Errorf("%s: connect to %s: answered by %q, want %q", label, addr, got, wantName)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ruleCounter sums "counter packets N" over the rules carrying comment.
func ruleCounter(t testing.TB, ruleset, comment string) int {
	t.Helper()
	re := regexp.MustCompile(`counter packets (\d+) bytes \d+.*comment "` + regexp.QuoteMeta(comment) + `"`)
	ms := re.FindAllStringSubmatch(ruleset, -1)
	if ms == nil {
		t.Fatalf("no counter rule with comment %q in ruleset:\n%s", comment, ruleset)
	}
	sum := 0
	for _, m := range ms {
		v, _ := strconv.Atoi(m[1])
		sum += v
	}
	return sum
}
