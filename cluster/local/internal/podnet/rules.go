package podnet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Each sandbox holds three nftables tables, each replaced whole in one nft
// transaction ("table X; delete table X; table X {...}" in one nft -f run is
// atomic, so there is never a moment without the old or the new rules):
//
//	inet gauntlet-guard       egress guard, static for the sandbox's life
//	ip   gauntlet-services    Service proxy (ClusterIP DNAT), from SetServices
//	inet gauntlet-partitions  network partitions that name the sandbox's address
//
// Rules are rendered as nft scripts and loaded with
// "nsenter --net=<netns file> nft -f -": the scripts are the readable
// source of truth (golden files in testdata), a human can load or list them
// with the very same commands, and no netlink expression encoding is needed.
const (
	guardTable     = "gauntlet-guard"
	servicesTable  = "gauntlet-services"
	partitionTable = "gauntlet-partitions"
)

// tableSet selects which tables a rules update rewrites.
type tableSet uint8

const (
	tGuard tableSet = 1 << iota
	tServices
	tPartitions
	tAll = tGuard | tServices | tPartitions
)

// partition is one active Partition call. a and b are sorted.
type partition struct {
	name string
	a, b []netip.Addr
	// ports, when set, limits the partition to TCP connections to these ports
	// of the peers (used between pods and the host: PartitionHostPorts).
	ports []uint16
}

// peersOf returns the addresses ip must not talk to under p.
func (p partition) peersOf(ip netip.Addr) []netip.Addr {
	var peers []netip.Addr
	if slices.Contains(p.a, ip) {
		peers = append(peers, p.b...)
	}
	if slices.Contains(p.b, ip) {
		peers = append(peers, p.a...)
	}
	return peers
}

// ruleState is everything a sandbox's rules derive from.
type ruleState struct {
	cidr       netip.Prefix
	svcCIDR    netip.Prefix // may be invalid: no Service range
	services   []Service    // validated, sorted
	partitions []partition  // sorted by name
}

// render writes the nft script that replaces the selected tables of the
// sandbox with address ip. A fresh namespace has no tables yet: its script
// only adds them, which saves the kernel's deletion work (about 10 ms of RCU
// grace periods here) on the pod start path.
func (s ruleState) render(ip netip.Addr, which tableSet, fresh bool) string {
	r := renderer{fresh: fresh}
	if which&tGuard != 0 {
		s.renderGuard(&r)
	}
	if which&tServices != 0 {
		s.renderServices(&r)
	}
	if which&tPartitions != 0 {
		s.renderPartitions(&r, ip)
	}
	return r.String()
}

type renderer struct {
	strings.Builder
	fresh bool
}

// beginTable opens a table definition. Unless the namespace is fresh, it first
// writes the idempotent "replace this table" preamble: declaring the table
// makes the delete valid whether or not the table existed.
func (w *renderer) beginTable(family, name string) {
	if !w.fresh {
		fmt.Fprintf(w, "table %s %s\ndelete table %s %s\n", family, name, family, name)
	}
	fmt.Fprintf(w, "table %s %s {\n", family, name)
}

func (s ruleState) renderGuard(w *renderer) {
	w.beginTable("inet", guardTable)
	w.WriteString("\tchain output {\n")
	w.WriteString("\t\ttype filter hook output priority 0; policy drop;\n")
	w.WriteString("\t\toif \"lo\" accept\n")
	fmt.Fprintf(w, "\t\tip daddr %s accept comment \"pod network, gateway = host\"\n", s.cidr.Masked())
	if s.svcCIDR.IsValid() {
		// Service traffic is DNATed to an endpoint in the nat output hook,
		// which runs before this one. What still targets the Service range
		// matched no Service port with endpoints: refuse it here rather than
		// let it reach the host's routing table.
		fmt.Fprintf(w, "\t\tip daddr %s meta l4proto tcp counter reject with tcp reset comment \"no such Service port or no endpoints\"\n", s.svcCIDR.Masked())
		fmt.Fprintf(w, "\t\tip daddr %s counter reject comment \"no such Service port or no endpoints\"\n", s.svcCIDR.Masked())
	}
	w.WriteString("\t\tcounter comment \"egress guard: not a cluster address, dropped\"\n")
	w.WriteString("\t}\n}\n")
}

func (s ruleState) renderServices(w *renderer) {
	w.beginTable("ip", servicesTable)
	w.WriteString("\tchain output {\n")
	w.WriteString("\t\ttype nat hook output priority -100; policy accept;\n")
	for _, svc := range s.services {
		if len(svc.Endpoints) == 0 {
			continue // the guard rejects it
		}
		fmt.Fprintf(w, "\t\tip daddr %s %s dport %d ", svc.IP, strings.ToLower(svc.Protocol), svc.Port)
		if len(svc.Endpoints) == 1 {
			fmt.Fprintf(w, "dnat ip to %s\n", svc.Endpoints[0])
			continue
		}
		fmt.Fprintf(w, "dnat ip to numgen random mod %d map { ", len(svc.Endpoints))
		for i, ep := range svc.Endpoints {
			if i > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(w, "%d : %s . %d", i, ep.Addr(), ep.Port())
		}
		w.WriteString(" }\n")
	}
	w.WriteString("\t}\n}\n")
}

func (s ruleState) renderPartitions(w *renderer, ip netip.Addr) {
	w.beginTable("inet", partitionTable)
	type rule struct {
		name  string
		peers []netip.Addr
		ports []uint16
	}
	var rules []rule
	for _, p := range s.partitions {
		if peers := p.peersOf(ip); len(peers) > 0 {
			rules = append(rules, rule{p.name, peers, p.ports})
		}
	}
	if len(rules) > 0 {
		for _, hook := range []struct{ chain, dir, port string }{{"input", "saddr", "sport"}, {"output", "daddr", "dport"}} {
			fmt.Fprintf(w, "\tchain %s {\n", hook.chain)
			fmt.Fprintf(w, "\t\ttype filter hook %s priority -10; policy accept;\n", hook.chain)
			for _, r := range rules {
				ports := ""
				if len(r.ports) > 0 {
					ports = fmt.Sprintf(" tcp %s { %s }", hook.port, joinPorts(r.ports))
				}
				fmt.Fprintf(w, "\t\tip %s { %s }%s counter drop comment \"partition %s\"\n", hook.dir, joinAddrs(r.peers), ports, r.name)
			}
			w.WriteString("\t}\n")
		}
	}
	w.WriteString("}\n")
}

func joinPorts(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

func joinAddrs(addrs []netip.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// normalizeServices validates svcs and returns a sorted deep copy.
func normalizeServices(svcs []Service) ([]Service, error) {
	out := make([]Service, 0, len(svcs))
	seen := make(map[string]bool, len(svcs))
	for _, svc := range svcs {
		switch svc.Protocol {
		case "TCP", "UDP":
		case "":
			svc.Protocol = "TCP" // the Kubernetes default
		default:
			return nil, fmt.Errorf("podnet: Service %s:%d: protocol %q is not supported: use TCP or UDP", svc.IP, svc.Port, svc.Protocol)
		}
		if !svc.IP.Is4() || svc.Port == 0 {
			return nil, fmt.Errorf("podnet: Service %s:%d/%s: need an IPv4 ClusterIP and a non-zero port", svc.IP, svc.Port, svc.Protocol)
		}
		key := fmt.Sprintf("%s:%d/%s", svc.IP, svc.Port, svc.Protocol)
		if seen[key] {
			return nil, fmt.Errorf("podnet: Service %s is listed twice: merge its endpoints into one entry", key)
		}
		seen[key] = true
		eps := slices.Clone(svc.Endpoints)
		for _, ep := range eps {
			if !ep.Addr().Unmap().Is4() || ep.Port() == 0 {
				return nil, fmt.Errorf("podnet: Service %s: endpoint %s: need an IPv4 address and a non-zero port", key, ep)
			}
		}
		for i, ep := range eps {
			eps[i] = netip.AddrPortFrom(ep.Addr().Unmap(), ep.Port())
		}
		slices.SortFunc(eps, func(x, y netip.AddrPort) int { return x.Compare(y) })
		svc.Endpoints = slices.Compact(eps)
		out = append(out, svc)
	}
	slices.SortFunc(out, func(x, y Service) int {
		if c := x.IP.Compare(y.IP); c != 0 {
			return c
		}
		if x.Port != y.Port {
			return int(x.Port) - int(y.Port)
		}
		return strings.Compare(x.Protocol, y.Protocol)
	})
	return out, nil
}

var partitionNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/=-]{0,99}$`)

// newPartition validates a Partition call's arguments against the pod CIDR.
func newPartition(cidr netip.Prefix, name string, a, b []netip.Addr) (partition, error) {
	if !partitionNamePattern.MatchString(name) {
		return partition{}, fmt.Errorf("podnet: invalid partition name %q: use 1-100 letters, digits or any of _.:/=- (starting with a letter or digit)", name)
	}
	norm := func(side string, addrs []netip.Addr) ([]netip.Addr, error) {
		if len(addrs) == 0 {
			return nil, fmt.Errorf("podnet: partition %q: side %s is empty: name at least one address", name, side)
		}
		out := make([]netip.Addr, len(addrs))
		for i, ip := range addrs {
			ip = ip.Unmap()
			if !cidr.Contains(ip) {
				return nil, fmt.Errorf("podnet: partition %q: %s is not in the pod CIDR %s: name pod addresses or the gateway", name, ip, cidr)
			}
			out[i] = ip
		}
		slices.SortFunc(out, netip.Addr.Compare)
		return slices.Compact(out), nil
	}
	na, err := norm("a", a)
	if err != nil {
		return partition{}, err
	}
	nb, err := norm("b", b)
	if err != nil {
		return partition{}, err
	}
	for _, ip := range na {
		if slices.Contains(nb, ip) {
			return partition{}, fmt.Errorf("podnet: partition %q: %s is on both sides: an address belongs to one side only", name, ip)
		}
	}
	return partition{name: name, a: na, b: nb}, nil
}

// nftRunner loads nft scripts into a network namespace.
type nftRunner struct {
	nsenter string // absolute paths, resolved once by Create
	nft     string
}

// errNftMissing and errNsenterMissing carry the fix in their message.
var (
	errNftMissing     = errors.New("podnet: the nft command is not installed: install the nftables package: apt-get install nftables")
	errNsenterMissing = errors.New("podnet: the nsenter command is not installed: install the util-linux package: apt-get install util-linux")
)

func newNftRunner() (nftRunner, error) {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return nftRunner{}, fmt.Errorf("%w (%v)", errNftMissing, err)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nftRunner{}, fmt.Errorf("%w (%v)", errNsenterMissing, err)
	}
	return nftRunner{nsenter: nsenter, nft: nft}, nil
}

// load runs the script as one nft transaction inside the namespace.
func (r nftRunner) load(ctx context.Context, nsPath, script string) error {
	out, err := r.run(ctx, nsPath, script, "-f", "-")
	if err != nil {
		return fmt.Errorf("podnet: load nftables rules into %s: %w: %s\nscript:\n%s", nsPath, err, out, script)
	}
	return nil
}

// list returns "nft list ruleset" inside the namespace.
func (r nftRunner) list(ctx context.Context, nsPath string) (string, error) {
	out, err := r.run(ctx, nsPath, "", "list", "ruleset")
	if err != nil {
		return "", fmt.Errorf("podnet: list nftables rules in %s: %w: %s", nsPath, err, out)
	}
	return out, nil
}

func (r nftRunner) run(ctx context.Context, nsPath, stdin string, args ...string) (string, error) {
	argv := append([]string{"--net=" + nsPath, r.nft}, args...)
	cmd := exec.CommandContext(ctx, r.nsenter, argv...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), ctx.Err()
	}
	return strings.TrimSpace(out.String()), err
}
