package podnet

import (
	"context"
	"errors"
	"flag"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/mountinfo"
	"github.com/gauntlet-dev/gauntlet/internal/testing/golden"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	pfx = netip.MustParsePrefix
	ip  = netip.MustParseAddr
	ap  = netip.MustParseAddrPort
)

func TestRenderGolden(t *testing.T) {
	base := ruleState{cidr: pfx("10.251.7.0/24"), svcCIDR: pfx("10.252.7.0/24")}
	withServices := base
	services, err := normalizeServices([]Service{
		{IP: ip("10.252.7.10"), Port: 80, Protocol: "TCP", Endpoints: []netip.AddrPort{ap("10.251.7.4:8080"), ap("10.251.7.3:8080")}},
		{IP: ip("10.252.7.1"), Port: 443, Protocol: "TCP", Endpoints: []netip.AddrPort{ap("10.251.7.1:6443")}},
		{IP: ip("10.252.7.11"), Port: 53, Protocol: "UDP", Endpoints: []netip.AddrPort{ap("10.251.7.5:5353")}},
		{IP: ip("10.252.7.12"), Port: 6379, Endpoints: nil},
	})
	if err != nil {
		t.Fatal(err)
	}
	withServices.services = services
	withPartitions := base
	p1, err := newPartition(base.cidr, "split-1", []netip.Addr{ip("10.251.7.2")}, []netip.Addr{ip("10.251.7.3"), ip("10.251.7.4")})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := newPartition(base.cidr, "apiserver", []netip.Addr{ip("10.251.7.3")}, []netip.Addr{ip("10.251.7.1")})
	if err != nil {
		t.Fatal(err)
	}
	withPartitions.partitions = []partition{p2, p1}
	withHostPorts := base
	p3, err := newPartition(base.cidr, "api-only", []netip.Addr{ip("10.251.7.2")}, []netip.Addr{ip("10.251.7.1")})
	if err != nil {
		t.Fatal(err)
	}
	p3.ports = []uint16{443, 6443}
	withHostPorts.partitions = []partition{p3}
	noSvcCIDR := base
	noSvcCIDR.svcCIDR = netip.Prefix{}

	tests := []struct {
		golden string
		state  ruleState
		ip     netip.Addr
		which  tableSet
		fresh  bool
	}{
		{"new-sandbox.nft", withPartitions, ip("10.251.7.2"), tAll, true},
		{"empty-all.nft", base, ip("10.251.7.2"), tAll, false},
		{"guard-no-service-cidr.nft", noSvcCIDR, ip("10.251.7.2"), tGuard, false},
		{"services.nft", withServices, ip("10.251.7.2"), tServices, false},
		{"partitions-side-a.nft", withPartitions, ip("10.251.7.2"), tPartitions, false},
		{"partitions-both.nft", withPartitions, ip("10.251.7.3"), tPartitions, false},
		{"partitions-uninvolved.nft", withPartitions, ip("10.251.7.9"), tPartitions, false},
		{"partitions-host-ports.nft", withHostPorts, ip("10.251.7.2"), tPartitions, false},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			got := tt.state.render(tt.ip, tt.which, tt.fresh)
			golden.Check(t, filepath.Join("testdata", tt.golden), []byte(got), *update)
		})
	}
}

func TestConfigValidation(t *testing.T) {
	ok := Config{Name: "c", StateDir: "/tmp/x", CIDR: pfx("10.251.9.0/24"), ServiceCIDR: pfx("10.252.9.0/24")}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"valid", func(*Config) {}, ""},
		{"no service CIDR is fine", func(c *Config) { c.ServiceCIDR = netip.Prefix{} }, ""},
		{"empty name", func(c *Config) { c.Name = "" }, "Config.Name is empty"},
		{"empty state dir", func(c *Config) { c.StateDir = "" }, "Config.StateDir is empty"},
		{"no CIDR", func(c *Config) { c.CIDR = netip.Prefix{} }, "need an IPv4 prefix"},
		{"IPv6 CIDR", func(c *Config) { c.CIDR = pfx("fd00::/64") }, "need an IPv4 prefix"},
		{"too small", func(c *Config) { c.CIDR = pfx("10.251.9.0/31") }, "between /8 and /30"},
		{"too large", func(c *Config) { c.CIDR = pfx("10.0.0.0/7") }, "between /8 and /30"},
		{"loopback", func(c *Config) { c.CIDR = pfx("127.1.0.0/16") }, "private unicast range"},
		{"service overlaps pods", func(c *Config) { c.ServiceCIDR = pfx("10.251.0.0/16") }, "overlaps the pod CIDR"},
		{"IPv6 services", func(c *Config) { c.ServiceCIDR = pfx("fd00::/108") }, "Service CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.mutate(&cfg)
			got, err := cfg.normalize(true)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if got.Logger == nil || !filepath.IsAbs(got.StateDir) {
					t.Errorf("normalize did not fill defaults: %+v", got)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			// Create must refuse the same config before touching the host.
			if _, err := Create(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Create error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestCreateWithoutNft(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	cfg := Config{Name: "no-nft", StateDir: t.TempDir(), CIDR: pfx("10.251.9.0/24")}
	_, err := Create(context.Background(), cfg)
	if !errors.Is(err, errNftMissing) {
		t.Fatalf("Create error = %v, want errNftMissing", err)
	}
	if !strings.Contains(err.Error(), "install the nftables package: apt-get install nftables") {
		t.Errorf("error %q does not name the fix", err)
	}
}

func TestInterfaceNames(t *testing.T) {
	tests := []struct {
		cluster string
		cidr    netip.Prefix
		ip      netip.Addr
		veth    string
	}{
		{"a", pfx("10.251.1.0/24"), ip("10.251.1.2"), vethNamePrefix("a") + "2"},
		{"a", pfx("10.251.1.0/24"), ip("10.251.1.254"), vethNamePrefix("a") + "fe"},
		{"a-very-long-cluster-name-that-goes-on", pfx("10.0.0.0/8"), ip("10.255.255.254"), vethNamePrefix("a-very-long-cluster-name-that-goes-on") + "fffffe"},
	}
	for _, tt := range tests {
		got := vethName(tt.cluster, tt.cidr, tt.ip)
		if got != tt.veth {
			t.Errorf("vethName(%q, %s, %s) = %q, want %q", tt.cluster, tt.cidr, tt.ip, got, tt.veth)
		}
		if len(got) > maxIfName || len(bridgeName(tt.cluster)) > maxIfName {
			t.Errorf("names %q / %q exceed %d bytes", got, bridgeName(tt.cluster), maxIfName)
		}
	}
	if bridgeName("a") == bridgeName("b") || vethNamePrefix("a") == vethNamePrefix("b") {
		t.Error("different clusters share interface names")
	}
	if strings.HasPrefix(bridgeName("a"), vethPrefix) {
		t.Error("the bridge name must not look like a veth of any cluster")
	}
}

func TestAllocate(t *testing.T) {
	tests := []struct {
		name string
		cidr netip.Prefix
		used []string
		want string // "" = full
	}{
		{"first pod skips network and gateway", pfx("10.251.1.0/24"), nil, "10.251.1.2"},
		{"lowest free", pfx("10.251.1.0/24"), []string{"10.251.1.2", "10.251.1.4"}, "10.251.1.3"},
		{"never broadcast", pfx("10.251.1.0/30"), []string{"10.251.1.2"}, ""},
		{"/30 has one pod", pfx("10.251.1.0/30"), nil, "10.251.1.2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := &Network{cfg: Config{CIDR: tt.cidr}, gateway: gatewayOf(tt.cidr), used: map[netip.Addr]string{}}
			for _, u := range tt.used {
				n.used[ip(u)] = "x"
			}
			got, ok := n.allocateLocked()
			if tt.want == "" {
				if ok {
					t.Fatalf("allocate = %s, want none", got)
				}
				return
			}
			if !ok || got != ip(tt.want) {
				t.Fatalf("allocate = %s (%v), want %s", got, ok, tt.want)
			}
		})
	}
}

func TestNormalizeServices(t *testing.T) {
	tests := []struct {
		name    string
		svcs    []Service
		wantErr string
	}{
		{"ok", []Service{{IP: ip("10.252.0.1"), Port: 80, Protocol: "TCP", Endpoints: []netip.AddrPort{ap("10.251.0.2:80")}}}, ""},
		{"default TCP", []Service{{IP: ip("10.252.0.1"), Port: 80}}, ""},
		{"SCTP", []Service{{IP: ip("10.252.0.1"), Port: 80, Protocol: "SCTP"}}, "not supported"},
		{"port 0", []Service{{IP: ip("10.252.0.1"), Protocol: "TCP"}}, "non-zero port"},
		{"IPv6", []Service{{IP: ip("fd00::1"), Port: 80}}, "IPv4 ClusterIP"},
		{"bad endpoint", []Service{{IP: ip("10.252.0.1"), Port: 80, Endpoints: []netip.AddrPort{ap("10.251.0.2:0")}}}, "endpoint"},
		{"duplicate", []Service{{IP: ip("10.252.0.1"), Port: 80}, {IP: ip("10.252.0.1"), Port: 80, Protocol: "TCP"}}, "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := normalizeServices(tt.svcs)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestNewPartition(t *testing.T) {
	cidr := pfx("10.251.1.0/24")
	one := []netip.Addr{ip("10.251.1.2")}
	two := []netip.Addr{ip("10.251.1.3")}
	tests := []struct {
		name    string
		pname   string
		a, b    []netip.Addr
		wantErr string
	}{
		{"ok", "p1", one, two, ""},
		{"gateway", "api", one, []netip.Addr{ip("10.251.1.1")}, ""},
		{"empty name", "", one, two, "invalid partition name"},
		{"quote in name", `a"b`, one, two, "invalid partition name"},
		{"empty side", "p", nil, two, "side a is empty"},
		{"outside CIDR", "p", one, []netip.Addr{ip("192.0.2.2")}, "not in the pod CIDR"},
		{"both sides", "p", one, []netip.Addr{ip("10.251.1.3"), ip("10.251.1.2")}, "on both sides"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newPartition(cidr, tt.pname, tt.a, tt.b)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	tests := map[string]string{
		`/tmp/a\040b`: "/tmp/a b",
		`/plain`:      "/plain",
		`/x\134y`:     `/x\y`,
		`/trail\04`:   `/trail\04`,
	}
	for in, want := range tests {
		if got := mountinfo.Unescape(in); got != want {
			t.Errorf("mountinfo.Unescape(%q) = %q, want %q", in, got, want)
		}
	}
}
