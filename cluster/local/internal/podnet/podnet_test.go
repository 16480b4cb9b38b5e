package podnet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as a Network owner that gets SIGKILLed
// (TestCleanupAfterKill).
const childEnv = "PODNET_TEST_CHILD_CONFIG"

func TestMain(m *testing.M) {
	if raw := os.Getenv(childEnv); raw != "" {
		os.Exit(runChild(raw))
	}
	os.Exit(m.Run())
}

// runChild creates a network with three sandboxes, Services and a partition,
// says "ready" and waits to be killed.
func runChild(raw string) int {
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	n, err := Create(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var sbs []*Sandbox
	for i := range 3 {
		sb, err := n.AddSandbox(ctx, fmt.Sprintf("pod-%d", i))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		sbs = append(sbs, sb)
	}
	err = errors.Join(
		n.SetServices(ctx, []Service{{IP: cfg.ServiceCIDR.Addr().Next(), Port: 80, Protocol: "TCP", Endpoints: []netip.AddrPort{netip.AddrPortFrom(sbs[0].IP, 80)}}}),
		n.Partition(ctx, "p", []netip.Addr{sbs[1].IP}, []netip.Addr{sbs[2].IP}),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	select {}
}

func TestConnectivity(t *testing.T) {
	n, cfg := newTestNetwork(t, "conn")
	ctx := context.Background()
	s1 := mustAdd(t, n, "s1")
	s2 := mustAdd(t, n, "s2")
	gw := n.Gateway()
	if want := gatewayOf(cfg.CIDR); gw != want {
		t.Fatalf("Gateway() = %s, want %s", gw, want)
	}
	if s1.IP != gw.Next() || s2.IP != gw.Next().Next() {
		t.Fatalf("addresses %s, %s: want the lowest free ones after the gateway %s", s1.IP, s2.IP, gw)
	}
	if s1.NetNSPath != filepath.Join(cfg.StateDir, "netns", "s1") {
		t.Errorf("NetNSPath = %s, want under StateDir/netns", s1.NetNSPath)
	}

	// Host side: the bridge carries the gateway and is up.
	br, err := netlink.LinkByName(n.BridgeName())
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	if br.Attrs().Flags&net.FlagUp == 0 {
		t.Error("bridge is down")
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil || len(addrs) != 1 || addrs[0].IPNet.String() != fmt.Sprintf("%s/%d", gw, cfg.CIDR.Bits()) {
		t.Errorf("bridge addresses = %v (%v), want %s/%d", addrs, err, gw, cfg.CIDR.Bits())
	}

	// Pod side: eth0 with the address and a stable MAC, lo up, default route.
	err = inNetNS(s1.NetNSPath, func() error {
		eth0, err := netlink.LinkByName("eth0")
		if err != nil {
			return err
		}
		if got := eth0.Attrs().HardwareAddr.String(); got != macFor(s1.IP).String() {
			return fmt.Errorf("eth0 MAC %s, want %s", got, macFor(s1.IP))
		}
		lo, err := netlink.LinkByName("lo")
		if err != nil || lo.Attrs().Flags&net.FlagUp == 0 {
			return fmt.Errorf("lo not up (%v)", err)
		}
		routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Dst == nil || r.Dst.String() == "0.0.0.0/0" {
				if !r.Gw.Equal(gw.AsSlice()) {
					return fmt.Errorf("default route via %s, want %s", r.Gw, gw)
				}
				return nil
			}
		}
		return fmt.Errorf("no default route in %v", routes)
	})
	if err != nil {
		t.Fatalf("inside s1: %v", err)
	}

	a1 := serveTCP(t, s1.NetNSPath, s1.IP.String()+":7001", "s1")
	a2 := serveTCP(t, s2.NetNSPath, s2.IP.String()+":7002", "s2")
	host := serveTCP(t, "", gw.String()+":0", "host")
	local := serveTCP(t, s1.NetNSPath, "127.0.0.1:7003", "s1-lo")
	tests := []struct {
		label  string
		from   string
		to     netip.AddrPort
		answer string
	}{
		{"pod to pod", s1.NetNSPath, a2, "s2"},
		{"pod to pod, reverse", s2.NetNSPath, a1, "s1"},
		{"host to pod", "", a2, "s2"},
		{"pod to host via gateway", s2.NetNSPath, host, "host"},
		{"pod loopback", s1.NetNSPath, local, "s1-lo"},
	}
	for _, tt := range tests {
		checkConn(t, tt.label, tt.from, tt.to, reach, tt.answer)
	}

	// A removed sandbox's address is free again and reused lowest-first.
	if err := n.RemoveSandbox(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := n.RemoveSandbox(ctx, "s1"); err != nil {
		t.Errorf("second RemoveSandbox: %v (unknown IDs are not an error)", err)
	}
	if _, err := os.Stat(s1.NetNSPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("namespace file still there after RemoveSandbox: %v", err)
	}
	s3 := mustAdd(t, n, "s3")
	if s3.IP != s1.IP {
		t.Errorf("s3 got %s, want the freed %s", s3.IP, s1.IP)
	}
	if _, err := n.AddSandbox(ctx, "s3"); !errors.Is(err, ErrSandboxExists) {
		t.Errorf("duplicate AddSandbox error = %v, want ErrSandboxExists", err)
	}
	if _, err := n.AddSandbox(ctx, "../escape"); err == nil {
		t.Error("AddSandbox accepted an ID that is not a file name")
	}
	got := n.Sandboxes()
	if len(got) != 2 || got[0].ID != "s2" || got[1].ID != "s3" {
		t.Errorf("Sandboxes() = %+v, want s2, s3", got)
	}
	a3 := serveTCP(t, s3.NetNSPath, s3.IP.String()+":7001", "s3")
	checkConn(t, "pod to recycled address", s2.NetNSPath, a3, reach, "s3")
}

func TestEgressGuard(t *testing.T) {
	n, cfg := newTestNetwork(t, "guard")
	other, _ := newTestNetwork(t, "guard-other") // a second cluster: addresses outside n's CIDR
	s1 := mustAdd(t, n, "s1")
	s2 := mustAdd(t, n, "s2")
	o1 := mustAdd(t, other, "o1")

	own := serveTCP(t, "", n.Gateway().String()+":0", "own-gateway")
	foreignHost := serveTCP(t, "", other.Gateway().String()+":0", "other-gateway")
	foreignPod := serveTCP(t, o1.NetNSPath, o1.IP.String()+":7000", "o1")

	// Control: without the guard, the other cluster's gateway (a local address
	// of the host) is reachable from a pod, so the guard is what blocks it.
	if _, err := n.nft.run(context.Background(), s2.NetNSPath, "", "delete", "table", "inet", guardTable); err != nil {
		t.Fatalf("remove guard in s2: %v", err)
	}
	checkConn(t, "control: no guard", s2.NetNSPath, foreignHost, reach, "other-gateway")

	checkConn(t, "own gateway", s1.NetNSPath, own, reach, "own-gateway")
	checkConn(t, "other cluster's gateway", s1.NetNSPath, foreignHost, dropped, "")
	checkConn(t, "other cluster's pod", s1.NetNSPath, foreignPod, dropped, "")
	checkConn(t, "outside address", s1.NetNSPath, netip.MustParseAddrPort("192.0.2.77:80"), dropped, "")
	checkConn(t, "unknown ClusterIP", s1.NetNSPath, netip.AddrPortFrom(cfg.ServiceCIDR.Addr().Next(), 80), refused, "")

	// IPv6 has no way out either: the pod interface has no IPv6 at all.
	err := inNetNS(s1.NetNSPath, func() error {
		c, err := net.DialTimeout("tcp6", "[2001:db8::1]:80", dialTimeout)
		if err == nil {
			c.Close()
			return errors.New("IPv6 connect succeeded")
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}

	rules, err := n.Ruleset(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"table inet gauntlet-guard",
		"type filter hook output priority filter; policy drop;",
		fmt.Sprintf("ip daddr %s accept", cfg.CIDR),
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, rules)
		}
	}
	if c := ruleCounter(t, rules, "egress guard: not a cluster address, dropped"); c < 3 {
		t.Errorf("guard drop counter = %d, want at least 3 (one per dropped connect)", c)
	}
}

func TestServices(t *testing.T) {
	n, cfg := newTestNetwork(t, "svc")
	ctx := context.Background()
	client := mustAdd(t, n, "client")
	b1 := mustAdd(t, n, "backend-1")
	b2 := mustAdd(t, n, "backend-2")
	serveTCP(t, b1.NetNSPath, b1.IP.String()+":8080", "backend-1")
	serveTCP(t, b2.NetNSPath, b2.IP.String()+":8080", "backend-2")
	serveUDP(t, b1.NetNSPath, b1.IP.String()+":5353", "udp-backend-1")
	api := serveTCP(t, "", n.Gateway().String()+":0", "apiserver")

	vip := func(i byte, port uint16) netip.AddrPort {
		a := cfg.ServiceCIDR.Addr().As4()
		a[3] = i
		return netip.AddrPortFrom(netip.AddrFrom4(a), port)
	}
	web, empty, kube, dns := vip(10, 80), vip(11, 80), vip(1, 443), vip(12, 53)
	ep := func(ip netip.Addr, port uint16) netip.AddrPort { return netip.AddrPortFrom(ip, port) }
	err := n.SetServices(ctx, []Service{
		{IP: web.Addr(), Port: web.Port(), Protocol: "TCP", Endpoints: []netip.AddrPort{ep(b1.IP, 8080), ep(b2.IP, 8080)}},
		{IP: empty.Addr(), Port: empty.Port(), Protocol: "TCP"},
		{IP: kube.Addr(), Port: kube.Port(), Protocol: "TCP", Endpoints: []netip.AddrPort{api}},
		{IP: dns.Addr(), Port: dns.Port(), Protocol: "UDP", Endpoints: []netip.AddrPort{ep(b1.IP, 5353)}},
	})
	if err != nil {
		t.Fatal(err)
	}

	seen := map[string]int{}
	for range 24 {
		got, err := fetch(client.NetNSPath, web, reachTimeout)
		if err != nil {
			t.Fatalf("connect to ClusterIP %s: %v", web, err)
		}
		seen[got]++
	}
	if seen["backend-1"] == 0 || seen["backend-2"] == 0 || len(seen) != 2 {
		t.Errorf("24 connections to %s reached %v, want both backends", web, seen)
	}
	checkConn(t, "Service without endpoints", client.NetNSPath, empty, refused, "")
	checkConn(t, "unknown port on a ClusterIP", client.NetNSPath, vip(10, 81), refused, "")
	checkConn(t, "Service to the host (apiserver)", client.NetNSPath, kube, reach, "apiserver")
	checkConn(t, "Service to the host from a backend", b1.NetNSPath, kube, reach, "apiserver")
	if got, err := exchangeUDP(client.NetNSPath, dns); err != nil || got != "udp-backend-1" {
		t.Errorf("UDP Service %s: got %q, %v", dns, got, err)
	}

	// A sandbox added later gets the current rules.
	late := mustAdd(t, n, "late")
	checkConn(t, "Service from a later sandbox", late.NetNSPath, kube, reach, "apiserver")

	// Replacing the Services is atomic and complete: only backend-2 remains.
	only2 := []Service{{IP: web.Addr(), Port: web.Port(), Protocol: "TCP", Endpoints: []netip.AddrPort{ep(b2.IP, 8080)}}}
	for range 2 { // the second, unchanged set is a no-op
		if err := n.SetServices(ctx, only2); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 {
		checkConn(t, "after update", late.NetNSPath, web, reach, "backend-2")
	}
	checkConn(t, "removed Service", client.NetNSPath, kube, refused, "")
	checkConn(t, "Service from its own endpoint (hairpin)", b2.NetNSPath, web, reach, "backend-2")
	if err := n.SetServices(ctx, []Service{{IP: web.Addr(), Port: 80, Protocol: "SCTP"}}); err == nil {
		t.Error("SetServices accepted SCTP")
	}
	checkConn(t, "invalid update changes nothing", client.NetNSPath, web, reach, "backend-2")
}

func TestPartition(t *testing.T) {
	n, _ := newTestNetwork(t, "part")
	ctx := context.Background()
	s := make([]*Sandbox, 3)
	addr := make([]netip.AddrPort, 3)
	for i := range s {
		s[i] = mustAdd(t, n, fmt.Sprintf("s%d", i))
		addr[i] = serveTCP(t, s[i].NetNSPath, s[i].IP.String()+":7000", s[i].ID)
	}
	type conn struct {
		from, to int
		want     expect
	}
	check := func(label string, conns []conn) {
		t.Helper()
		for _, c := range conns {
			checkConn(t, fmt.Sprintf("%s: s%d→s%d", label, c.from, c.to), s[c.from].NetNSPath, addr[c.to], c.want, s[c.to].ID)
		}
	}

	p1 := func(ip ...netip.Addr) []netip.Addr { return ip }
	if err := n.Partition(ctx, "p1", p1(s[0].IP), p1(s[1].IP)); err != nil {
		t.Fatal(err)
	}
	check("p1", []conn{{0, 1, dropped}, {1, 0, dropped}, {0, 2, reach}, {2, 1, reach}, {2, 0, reach}})
	// The drops happened in the sandboxes' own partition rules.
	for _, id := range []string{"s0", "s1"} {
		rules, err := n.Ruleset(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c := ruleCounter(t, rules, "partition p1"); c == 0 {
			t.Errorf("%s: partition p1 dropped nothing:\n%s", id, rules)
		}
	}
	if err := n.Partition(ctx, "p1", p1(s[0].IP), p1(s[2].IP)); !errors.Is(err, ErrPartitionExists) {
		t.Errorf("reusing an active name: error = %v, want ErrPartitionExists", err)
	}

	if err := n.Partition(ctx, "p2", p1(s[0].IP), p1(s[2].IP)); err != nil {
		t.Fatal(err)
	}
	check("p1+p2", []conn{{0, 1, dropped}, {0, 2, dropped}, {2, 0, dropped}, {1, 2, reach}})
	if got := n.Partitions(); strings.Join(got, ",") != "p1,p2" {
		t.Errorf("Partitions() = %v, want [p1 p2]", got)
	}

	if err := n.Heal(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	check("p2 only", []conn{{0, 1, reach}, {1, 0, reach}, {0, 2, dropped}, {2, 0, dropped}})
	if err := n.Heal(ctx, "p2"); err != nil {
		t.Fatal(err)
	}
	check("healed", []conn{{0, 1, reach}, {0, 2, reach}, {2, 0, reach}, {1, 2, reach}})
	if err := n.Heal(ctx, "p2"); !errors.Is(err, ErrUnknownPartition) {
		t.Errorf("healing twice: error = %v, want ErrUnknownPartition", err)
	}
	rules, err := n.Ruleset(ctx, "s0")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rules, "partition p") {
		t.Errorf("healed rules remain:\n%s", rules)
	}
}

func TestPartitionFromGateway(t *testing.T) {
	n, cfg := newTestNetwork(t, "partgw")
	ctx := context.Background()
	s0 := mustAdd(t, n, "s0")
	s1 := mustAdd(t, n, "s1")
	a0 := serveTCP(t, s0.NetNSPath, s0.IP.String()+":7000", "s0")
	a1 := serveTCP(t, s1.NetNSPath, s1.IP.String()+":7000", "s1")
	api := serveTCP(t, "", n.Gateway().String()+":0", "apiserver")
	kube := netip.AddrPortFrom(cfg.ServiceCIDR.Addr().Next(), 443)
	if err := n.SetServices(ctx, []Service{{IP: kube.Addr(), Port: kube.Port(), Protocol: "TCP", Endpoints: []netip.AddrPort{api}}}); err != nil {
		t.Fatal(err)
	}

	// The next sandbox's address is predictable (lowest free): partition it
	// from s1 before it exists.
	next := s1.IP.Next()
	if err := n.Partition(ctx, "future", []netip.Addr{next}, []netip.Addr{s1.IP}); err != nil {
		t.Fatal(err)
	}
	if err := n.Partition(ctx, "apiserver", []netip.Addr{s0.IP}, []netip.Addr{n.Gateway()}); err != nil {
		t.Fatal(err)
	}
	s2 := mustAdd(t, n, "s2")
	if s2.IP != next {
		t.Fatalf("s2 got %s, want %s", s2.IP, next)
	}

	tests := []struct {
		label string
		from  string
		to    netip.AddrPort
		want  expect
		name  string
	}{
		{"host to partitioned pod", "", a0, dropped, ""},
		{"partitioned pod to host", s0.NetNSPath, api, dropped, ""},
		{"partitioned pod to apiserver ClusterIP", s0.NetNSPath, kube, dropped, ""},
		{"other pod to apiserver ClusterIP", s1.NetNSPath, kube, reach, "apiserver"},
		{"host to other pod", "", a1, reach, "s1"},
		{"pods still talk", s1.NetNSPath, a0, reach, "s0"},
		{"later sandbox partitioned", s2.NetNSPath, a1, dropped, ""},
		{"later sandbox to others", s2.NetNSPath, a0, reach, "s0"},
	}
	for _, tt := range tests {
		checkConn(t, tt.label, tt.from, tt.to, tt.want, tt.name)
	}
	rules, err := n.Ruleset(ctx, "s0")
	if err != nil {
		t.Fatal(err)
	}
	if c := ruleCounter(t, rules, "partition apiserver"); c < 3 {
		t.Errorf("s0: partition apiserver dropped %d packets, want at least 3:\n%s", c, rules)
	}
	if err := n.Heal(ctx, "apiserver"); err != nil {
		t.Fatal(err)
	}
	checkConn(t, "healed: host to pod", "", a0, reach, "s0")
	checkConn(t, "healed: pod to apiserver ClusterIP", s0.NetNSPath, kube, reach, "apiserver")
	checkConn(t, "other partition stays", s2.NetNSPath, a1, dropped, "")
}

func TestCreateRefuses(t *testing.T) {
	n, cfg := newTestNetwork(t, "refuse")
	ctx := context.Background()
	tests := []struct {
		name   string
		mutate func(*Config)
		want   error
	}{
		{"same CIDR, other cluster", func(c *Config) { c.Name += "-other"; c.StateDir = t.TempDir() }, ErrCIDROverlap},
		{"CIDR containing it", func(c *Config) {
			c.Name += "-other"
			c.StateDir = t.TempDir()
			c.CIDR = netip.PrefixFrom(c.CIDR.Addr(), 20).Masked()
		}, ErrCIDROverlap},
		{"bridge exists", func(c *Config) { c.StateDir = t.TempDir() }, ErrBridgeExists},
		{"state folder in use", func(c *Config) { c.Name += "-other" }, ErrLeftovers},
		{"host's own address", func(c *Config) {
			c.Name += "-other"
			c.StateDir = t.TempDir()
			c.CIDR = netip.MustParsePrefix("127.0.0.0/8")
		}, nil}, // rejected by validation
	}
	mustAdd(t, n, "s0") // so the state folder has leftovers
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg
			tt.mutate(&c)
			other, err := Create(ctx, c)
			if err == nil {
				other.Close(ctx)
				t.Fatal("Create succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
			t.Logf("error (as the user sees it): %v", err)
		})
	}
	// A host route counts as well as an address.
	c := cfg
	c.Name += "-route"
	c.StateDir = t.TempDir()
	c.CIDR = netip.MustParsePrefix("10.251.250.0/24")
	route := &netlink.Route{Dst: &net.IPNet{IP: net.IPv4(10, 251, 250, 0).To4(), Mask: net.CIDRMask(25, 32)}, Type: unix.RTN_BLACKHOLE}
	if err := netlink.RouteAdd(route); err != nil {
		t.Fatalf("add blackhole route: %v", err)
	}
	defer netlink.RouteDel(route)
	if other, err := Create(ctx, c); !errors.Is(err, ErrCIDROverlap) {
		if other != nil {
			other.Close(ctx)
		}
		t.Errorf("Create over a routed range: error = %v, want ErrCIDROverlap", err)
	}
}

func TestCloseLeavesNothing(t *testing.T) {
	requireRoot(t)
	n, cfg := newTestNetwork(t, "close")
	ctx := context.Background()
	var sbs []*Sandbox
	for i := range 4 {
		sbs = append(sbs, mustAdd(t, n, fmt.Sprintf("s%d", i)))
	}
	if err := n.Partition(ctx, "p", []netip.Addr{sbs[0].IP}, []netip.Addr{sbs[1].IP}); err != nil {
		t.Fatal(err)
	}
	// A process inside a namespace must not keep anything of ours alive.
	sleeper := exec.Command("nsenter", "--net="+sbs[2].NetNSPath, "sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	mps, err := mountPointsUnder(cfg.StateDir)
	if err != nil || len(mps) != 5 { // the folder and four namespaces
		t.Fatalf("mounts before Close = %v (%v), want the netns folder and 4 namespaces", mps, err)
	}
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, cfg)
	if err := n.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := n.AddSandbox(ctx, "late"); !errors.Is(err, ErrClosed) {
		t.Errorf("AddSandbox after Close: error = %v, want ErrClosed", err)
	}
	// The process's namespace lost its interface with the veth.
	out, err := exec.Command("nsenter", "--net=/proc/"+fmt.Sprint(sleeper.Process.Pid)+"/ns/net", "ip", "-o", "link").CombinedOutput()
	if err != nil {
		t.Fatalf("ip link in the orphaned namespace: %v: %s", err, out)
	}
	if strings.Contains(string(out), "eth0") {
		t.Errorf("eth0 survived Close in a namespace a process still holds:\n%s", out)
	}
}

func TestCleanupAfterKill(t *testing.T) {
	requireRoot(t)
	ctx := context.Background()
	// Find a free range the way newTestNetwork does, then hand it to a child.
	probe, cfg := newTestNetwork(t, "killed")
	if err := probe.Close(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(Config{Name: cfg.Name, StateDir: cfg.StateDir, CIDR: cfg.CIDR, ServiceCIDR: cfg.ServiceCIDR})
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), childEnv+"="+string(raw))
	child.Stderr = os.Stderr
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "ready\n" {
		child.Process.Kill()
		child.Wait()
		t.Fatalf("child did not get ready: %q, %v", line, err)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()

	// The dead owner left its bridge, veths and mounts behind.
	if _, err := netlink.LinkByName(bridgeName(cfg.Name)); err != nil {
		t.Fatalf("expected the dead owner's bridge: %v", err)
	}
	if mps, _ := mountPointsUnder(cfg.StateDir); len(mps) != 4 {
		t.Fatalf("expected 4 mounts from the dead owner, got %v", mps)
	}
	if _, err := Create(ctx, cfg); !errors.Is(err, ErrBridgeExists) || !strings.Contains(err.Error(), "Cleanup") {
		t.Errorf("Create over a dead owner's network: error = %v, want ErrBridgeExists naming Cleanup", err)
	}
	for i := range 2 { // idempotent
		if err := Cleanup(ctx, Config{Name: cfg.Name, StateDir: cfg.StateDir}); err != nil {
			t.Fatalf("Cleanup #%d: %v", i+1, err)
		}
		assertNoLeftovers(t, cfg)
	}
	// The cluster can start again afterwards.
	n, err := Create(ctx, cfg)
	if err != nil {
		t.Fatalf("Create after Cleanup: %v", err)
	}
	mustAdd(t, n, "again")
	if err := n.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertNoLeftovers(t, cfg)
}

func TestConcurrentSandboxes(t *testing.T) {
	n, cfg := newTestNetwork(t, "conc")
	ctx := context.Background()
	const workers, rounds = 8, 4
	svc := func(i int) []Service {
		return []Service{{IP: cfg.ServiceCIDR.Addr().Next(), Port: uint16(1000 + i), Protocol: "TCP", Endpoints: []netip.AddrPort{netip.AddrPortFrom(n.Gateway(), 1)}}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				id := fmt.Sprintf("w%d-r%d", w, r)
				if _, err := n.AddSandbox(ctx, id); err != nil {
					errs <- err
					return
				}
				if r%2 == 1 { // remove every other one
					if err := n.RemoveSandbox(ctx, id); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	wg.Add(1)
	go func() { // rule changes racing with the sandboxes
		defer wg.Done()
		for i := range 6 {
			if err := n.SetServices(ctx, svc(i)); err != nil {
				errs <- err
			}
			name := fmt.Sprintf("p%d", i)
			if err := n.Partition(ctx, name, []netip.Addr{n.Gateway().Next()}, []netip.Addr{n.Gateway().Next().Next()}); err != nil {
				errs <- err
			}
			if err := n.Heal(ctx, name); err != nil {
				errs <- err
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sbs := n.Sandboxes()
	if len(sbs) != workers*rounds/2 {
		t.Fatalf("%d sandboxes, want %d", len(sbs), workers*rounds/2)
	}
	ips := map[netip.Addr]string{}
	for _, sb := range sbs {
		if prev, dup := ips[sb.IP]; dup {
			t.Errorf("%s and %s share %s", prev, sb.ID, sb.IP)
		}
		ips[sb.IP] = sb.ID
		rules, err := n.Ruleset(ctx, sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(rules, fmt.Sprintf("tcp dport %d", 1005)) || strings.Contains(rules, "partition p") {
			t.Errorf("sandbox %s does not hold the final rules:\n%s", sb.ID, rules)
		}
	}
	links, err := retryDump(netlink.LinkList)
	if err != nil {
		t.Fatal(err)
	}
	veths := 0
	for _, l := range links {
		if strings.HasPrefix(l.Attrs().Name, vethNamePrefix(cfg.Name)) {
			veths++
		}
	}
	if veths != len(sbs) {
		t.Errorf("%d host veths for %d sandboxes", veths, len(sbs))
	}
}

func TestGoldenScriptsLoad(t *testing.T) {
	requireRoot(t)
	runner, err := newNftRunner()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("testdata/*.nft")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	dir := t.TempDir()
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			script, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "ns")
			h, err := newNetNS(path)
			if err != nil {
				t.Fatal(err)
			}
			h.Close()
			defer func() {
				if err := removeNetNSFile(path); err != nil {
					t.Error(err)
				}
			}()
			loads := 1
			if strings.Contains(string(script), "delete table") {
				loads = 2 // loading twice proves the replace preamble
			}
			for i := range loads {
				if err := runner.load(context.Background(), path, string(script)); err != nil {
					t.Fatalf("load #%d: %v", i+1, err)
				}
			}
		})
	}
}

func TestAddSandboxLatency(t *testing.T) {
	n, _ := newTestNetwork(t, "latency")
	ctx := context.Background()
	var worst time.Duration
	for i := range 10 {
		start := time.Now()
		if _, err := n.AddSandbox(ctx, fmt.Sprintf("s%d", i)); err != nil {
			t.Fatal(err)
		}
		worst = max(worst, time.Since(start))
	}
	// Speed is a benchmark's figure (`make bench`), not an assertion here.
	t.Logf("worst AddSandbox of 10: %v", worst)
}

func BenchmarkAddSandbox(b *testing.B) {
	n, _ := newTestNetwork(b, "bench")
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("b%d", i)
		if _, err := n.AddSandbox(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := n.RemoveSandbox(ctx, id); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
