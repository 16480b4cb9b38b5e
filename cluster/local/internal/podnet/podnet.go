// Package podnet gives each pod of an embedded cluster its own network namespace,
// attached by a veth pair to a per-cluster bridge and addressed from the cluster's
// pod CIDR, so pods reach each other and the host (the bridge's gateway address)
// and the host reaches them. It also renders per-pod nftables rules: the Service
// proxy (ClusterIP DNAT), an egress guard (nothing leaves the cluster's own
// addresses) and network partitions (faults).
//
// Namespaces are files under the cluster's state folder (never /run/netns), so
// nothing on the host outside that folder changes besides the bridge and veths,
// which Close and Cleanup remove.
package podnet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Named errors, one per invariant. Returned errors wrap them with details and
// the fix.
var (
	// ErrCIDROverlap: a pod CIDR overlaps no address or route on the host.
	ErrCIDROverlap = errors.New("podnet: the pod CIDR must not overlap any address or route on the host")
	// ErrBridgeExists: Create makes the cluster's bridge; it must not exist yet.
	ErrBridgeExists = errors.New("podnet: the cluster's bridge must not exist before Create")
	// ErrLeftovers: Create starts from a state folder without namespaces or records.
	ErrLeftovers = errors.New("podnet: the state folder must hold no pod namespaces or sandbox records from an earlier run")
	// ErrSandboxExists: a sandbox ID is in use at most once.
	ErrSandboxExists = errors.New("podnet: a sandbox ID may be in use only once")
	// ErrCIDRFull: every sandbox needs a free address in the pod CIDR.
	ErrCIDRFull = errors.New("podnet: every sandbox needs a free address in the pod CIDR")
	// ErrPartitionExists: a partition name is active at most once.
	ErrPartitionExists = errors.New("podnet: a partition name may be active only once")
	// ErrUnknownPartition: Heal names an active partition.
	ErrUnknownPartition = errors.New("podnet: Heal must name an active partition")
	// ErrClosed: a closed Network accepts no more changes.
	ErrClosed = errors.New("podnet: the network is closed")
)

// Config describes one cluster's pod network.
type Config struct {
	// Name is the cluster name; interface names derive from it.
	Name string
	// StateDir is the cluster's state folder; namespaces live under StateDir/netns.
	StateDir string
	// CIDR is the pod CIDR (e.g. 10.201.3.0/24); its first address is the gateway
	// on the bridge.
	CIDR netip.Prefix
	// ServiceCIDR is the Service ClusterIP range, allowed by the egress guard.
	ServiceCIDR netip.Prefix
	// Logger receives debug records of sandbox changes; nil discards them.
	Logger *slog.Logger
}

// normalize validates the config. Cleanup needs only Name and StateDir.
func (c Config) normalize(needCIDR bool) (Config, error) {
	if c.Name == "" {
		return c, errors.New("podnet: Config.Name is empty: set the cluster name")
	}
	if c.StateDir == "" {
		return c, errors.New("podnet: Config.StateDir is empty: set the cluster's state folder")
	}
	abs, err := filepath.Abs(c.StateDir)
	if err != nil {
		return c, fmt.Errorf("podnet: state folder %q: %w", c.StateDir, err)
	}
	c.StateDir = abs
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if !needCIDR {
		return c, nil
	}
	if !c.CIDR.IsValid() || !c.CIDR.Addr().Is4() {
		return c, fmt.Errorf("podnet: pod CIDR %v: need an IPv4 prefix such as 10.201.3.0/24", c.CIDR)
	}
	if b := c.CIDR.Bits(); b < minPrefixBits || b > maxPrefixBits {
		return c, fmt.Errorf("podnet: pod CIDR %s: the prefix length must be between /%d and /%d", c.CIDR, minPrefixBits, maxPrefixBits)
	}
	c.CIDR = c.CIDR.Masked()
	if a := c.CIDR.Addr(); a.IsLoopback() || a.IsMulticast() || a.IsUnspecified() || a.IsLinkLocalUnicast() {
		return c, fmt.Errorf("podnet: pod CIDR %s: use a private unicast range such as 10.201.3.0/24", c.CIDR)
	}
	if c.ServiceCIDR.IsValid() {
		if !c.ServiceCIDR.Addr().Is4() {
			return c, fmt.Errorf("podnet: Service CIDR %s: need an IPv4 prefix", c.ServiceCIDR)
		}
		c.ServiceCIDR = c.ServiceCIDR.Masked()
		if prefixOverlaps(c.CIDR, c.ServiceCIDR) {
			return c, fmt.Errorf("podnet: Service CIDR %s overlaps the pod CIDR %s: pick disjoint ranges", c.ServiceCIDR, c.CIDR)
		}
	}
	return c, nil
}

// Network is one cluster's bridge and its pod sandboxes.
type Network struct {
	cfg         Config
	log         *slog.Logger
	dirs        stateDirs
	bridge      string
	bridgeIndex int
	gateway     netip.Addr
	host        *netlink.Handle // netlink socket in the host namespace; safe for concurrent use
	nft         nftRunner

	mu         sync.Mutex
	closed     bool // no more changes
	released   bool // Close finished: bridge gone, host handle closed
	sandboxes  map[string]*sandbox
	used       map[netip.Addr]string // address → sandbox ID
	services   []Service             // normalized
	svcGen     uint64                // bumped by every change of services
	svcSynced  bool                  // every sandbox holds services (generation svcGen)
	partitions map[string]partition
}

// sandbox is the in-memory side of one pod namespace.
type sandbox struct {
	// mu is held while the sandbox is created, its rules change, or it is
	// removed. Lock order: sandbox.mu before Network.mu.
	mu   sync.Mutex
	rec  sandboxRecord // immutable
	gone bool          // removed or failed; guarded by mu

	ready bool // fully created; guarded by Network.mu
}

// Sandbox is one pod's network namespace.
type Sandbox struct {
	// ID is the caller's key (the pod UID).
	ID string
	// NetNSPath is the namespace file to join (setns) or nsenter --net=.
	NetNSPath string
	// IP is the pod's address.
	IP netip.Addr
}

// Service is one ClusterIP port and its ready endpoints.
type Service struct {
	IP        netip.Addr
	Port      uint16
	Protocol  string // "TCP" or "UDP"
	Endpoints []netip.AddrPort
}

// Create makes the bridge with the gateway address and returns the network. It
// fails with a clear error when the CIDR overlaps an address already on the host.
func Create(ctx context.Context, cfg Config) (*Network, error) {
	cfg, err := cfg.normalize(true)
	if err != nil {
		return nil, err
	}
	runner, err := newNftRunner()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("podnet: open netlink socket: %w", err)
	}
	n := &Network{
		cfg:        cfg,
		log:        cfg.Logger.With("cluster", cfg.Name),
		dirs:       newStateDirs(cfg.StateDir),
		bridge:     bridgeName(cfg.Name),
		gateway:    gatewayOf(cfg.CIDR),
		host:       host,
		nft:        runner,
		sandboxes:  make(map[string]*sandbox),
		used:       make(map[netip.Addr]string),
		partitions: make(map[string]partition),
	}
	if err := n.create(); err != nil {
		host.Close()
		return nil, err
	}
	n.log.Debug("pod network created", "bridge", n.bridge, "cidr", cfg.CIDR, "gateway", n.gateway)
	return n, nil
}

// Gateway is the bridge's address: the host as seen from pods.
func (n *Network) Gateway() netip.Addr { return n.gateway }

// BridgeName is the bridge interface's name.
func (n *Network) BridgeName() string { return n.bridge }

// AddSandbox creates a pod namespace with an address, loopback up, a default route
// via the gateway, the egress guard, the current Services and any active partition
// that names its address.
func (n *Network) AddSandbox(ctx context.Context, id string) (*Sandbox, error) {
	if err := validateID(id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, ErrClosed
	}
	if _, ok := n.sandboxes[id]; ok {
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: sandbox %q exists: remove it first", ErrSandboxExists, id)
	}
	ip, ok := n.allocateLocked()
	if !ok {
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: all addresses of %s are taken (%d sandboxes): use a larger pod CIDR", ErrCIDRFull, n.cfg.CIDR, len(n.sandboxes))
	}
	sb := &sandbox{rec: sandboxRecord{
		ID:       id,
		IP:       ip,
		HostVeth: vethName(n.cfg.Name, n.cfg.CIDR, ip),
		NetNS:    n.dirs.netnsPath(id),
	}}
	sb.mu.Lock() // uncontended: nobody else has seen sb yet
	defer sb.mu.Unlock()
	n.sandboxes[id] = sb
	n.used[ip] = id
	// Rendered after the sandbox is visible: a concurrent rule change either
	// happened before (and is in this script) or will rewrite this sandbox's
	// rules once we release sb.mu.
	script := n.ruleStateLocked().render(ip, tAll, true)
	n.mu.Unlock()

	err := n.setupSandbox(ctx, sb.rec, script)
	if err == nil {
		n.mu.Lock()
		if n.closed {
			err = ErrClosed
		} else {
			sb.ready = true
		}
		n.mu.Unlock()
	}
	if err != nil {
		if terr := n.teardownSandbox(sb.rec); terr != nil {
			// Keep the entry (and its address) so RemoveSandbox or Close can retry.
			return nil, fmt.Errorf("podnet: add sandbox %q: %w (and undoing it failed: %v; call RemoveSandbox to retry)", id, err, terr)
		}
		n.forget(sb)
		return nil, fmt.Errorf("podnet: add sandbox %q: %w", id, err)
	}
	n.log.Debug("sandbox added", "id", id, "ip", ip, "veth", sb.rec.HostVeth, "took", time.Since(start))
	return &Sandbox{ID: id, NetNSPath: sb.rec.NetNS, IP: ip}, nil
}

// RemoveSandbox deletes a pod namespace and frees its address. Unknown IDs are not an error.
func (n *Network) RemoveSandbox(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n.mu.Lock()
	sb := n.sandboxes[id]
	n.mu.Unlock()
	if sb == nil {
		return nil
	}
	return n.removeSandbox(sb)
}

func (n *Network) removeSandbox(sb *sandbox) error {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if sb.gone {
		return nil
	}
	if err := n.teardownSandbox(sb.rec); err != nil {
		return fmt.Errorf("podnet: remove sandbox %q: %w", sb.rec.ID, err)
	}
	n.forget(sb)
	n.log.Debug("sandbox removed", "id", sb.rec.ID, "ip", sb.rec.IP)
	return nil
}

// Sandboxes lists the fully created sandboxes, sorted by ID.
func (n *Network) Sandboxes() []Sandbox {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Sandbox, 0, len(n.sandboxes))
	for _, sb := range n.sandboxes {
		if sb.ready {
			out = append(out, Sandbox{ID: sb.rec.ID, NetNSPath: sb.rec.NetNS, IP: sb.rec.IP})
		}
	}
	slices.SortFunc(out, func(a, b Sandbox) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Partitions lists the names of the active partitions, sorted.
func (n *Network) Partitions() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partitionNamesLocked()
}

// Ruleset returns "nft list ruleset" inside a sandbox, for diagnostics.
func (n *Network) Ruleset(ctx context.Context, id string) (string, error) {
	n.mu.Lock()
	sb := n.sandboxes[id]
	n.mu.Unlock()
	if sb == nil {
		return "", fmt.Errorf("podnet: no sandbox %q", id)
	}
	return n.nft.list(ctx, sb.rec.NetNS)
}

// ruleStateLocked snapshots what rules derive from. Caller holds n.mu.
func (n *Network) ruleStateLocked() ruleState {
	parts := make([]partition, 0, len(n.partitions))
	for _, p := range n.partitions {
		parts = append(parts, p)
	}
	slices.SortFunc(parts, func(a, b partition) int { return cmp.Compare(a.name, b.name) })
	return ruleState{cidr: n.cfg.CIDR, svcCIDR: n.cfg.ServiceCIDR, services: n.services, partitions: parts}
}

// applyParallelism bounds concurrent nft runs (each is a short exec).
const applyParallelism = 4

// applyRules rewrites the selected tables in every sandbox whose address
// passes filter (nil: all). Each sandbox renders from the state current when
// its turn comes, under its own lock, so the last writer always wins with the
// newest state whatever the interleaving of concurrent calls.
func (n *Network) applyRules(ctx context.Context, which tableSet, filter func(netip.Addr) bool) error {
	n.mu.Lock()
	sbs := make([]*sandbox, 0, len(n.sandboxes))
	for _, sb := range n.sandboxes {
		if filter == nil || filter(sb.rec.IP) {
			sbs = append(sbs, sb)
		}
	}
	n.mu.Unlock()

	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, applyParallelism)
		emu  sync.Mutex
		errs []error
	)
	for _, sb := range sbs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sb.mu.Lock()
			defer sb.mu.Unlock()
			if sb.gone {
				return
			}
			n.mu.Lock()
			script := n.ruleStateLocked().render(sb.rec.IP, which, false)
			n.mu.Unlock()
			if err := n.nft.load(ctx, sb.rec.NetNS, script); err != nil {
				emu.Lock()
				errs = append(errs, fmt.Errorf("sandbox %q: %w", sb.rec.ID, err))
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// SetServices replaces the Service proxy rules in every sandbox (and in sandboxes
// added later) so that connections to a ClusterIP:port reach one of its endpoints.
func (n *Network) SetServices(ctx context.Context, svcs []Service) error {
	norm, err := normalizeServices(svcs)
	if err != nil {
		return err
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	if n.svcSynced && slices.EqualFunc(norm, n.services, Service.equal) {
		n.mu.Unlock()
		return nil // a Service proxy loop resends unchanged sets often
	}
	n.services = norm
	n.svcGen++
	gen := n.svcGen
	n.svcSynced = false
	n.mu.Unlock()
	if err := n.applyRules(ctx, tServices, nil); err != nil {
		return fmt.Errorf("podnet: update Service rules (the new Services stay current; call SetServices again to retry): %w", err)
	}
	n.mu.Lock()
	n.svcSynced = n.svcGen == gen
	n.mu.Unlock()
	return nil
}

// equal compares normalized Services.
func (s Service) equal(o Service) bool {
	return s.IP == o.IP && s.Port == o.Port && s.Protocol == o.Protocol && slices.Equal(s.Endpoints, o.Endpoints)
}

// Partition drops all traffic between the addresses in a and those in b, in both
// directions, in every sandbox whose address is in a or b (now or added later).
// The gateway address stands for the host, including the API server. name
// identifies the partition for Heal; reusing an active name is an error.
func (n *Network) Partition(ctx context.Context, name string, a, b []netip.Addr) error {
	p, err := newPartition(n.cfg.CIDR, name, a, b)
	if err != nil {
		return err
	}
	return n.addPartition(ctx, p)
}

// addPartition records p and applies it to the sandboxes it involves.
func (n *Network) addPartition(ctx context.Context, p partition) error {
	name := p.name
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	if _, ok := n.partitions[name]; ok {
		n.mu.Unlock()
		return fmt.Errorf("%w: partition %q is active: Heal it first or use another name", ErrPartitionExists, name)
	}
	n.partitions[name] = p
	n.mu.Unlock()
	if err := n.applyRules(ctx, tPartitions, p.involves); err != nil {
		return fmt.Errorf("podnet: partition %q is recorded but not applied everywhere (Heal it to undo): %w", name, err)
	}
	n.log.Debug("partition applied", "name", name, "a", p.a, "b", p.b)
	return nil
}

// involves reports whether a sandbox with address ip gets rules for p.
func (p partition) involves(ip netip.Addr) bool {
	return slices.Contains(p.a, ip) || slices.Contains(p.b, ip)
}

// PartitionHostPorts drops TCP traffic between the pods at addresses pods and the
// host (the gateway) on the given host ports only, in both directions, until
// Heal(name). Cutting pods off from the API server this way keeps the kubelet's
// probes (which come from the host on the pods' own ports) working, as on a real
// node where the kubelet is local.
func (n *Network) PartitionHostPorts(ctx context.Context, name string, pods []netip.Addr, ports []uint16) error {
	if len(ports) == 0 {
		return fmt.Errorf("podnet: partition %q: no ports: use Partition to cut all traffic", name)
	}
	p, err := newPartition(n.cfg.CIDR, name, pods, []netip.Addr{n.Gateway()})
	if err != nil {
		return err
	}
	p.ports = slices.Sorted(slices.Values(ports))
	p.ports = slices.Compact(p.ports)
	return n.addPartition(ctx, p)
}

// Heal removes the partition called name.
func (n *Network) Heal(ctx context.Context, name string) error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return ErrClosed
	}
	p, ok := n.partitions[name]
	if !ok {
		n.mu.Unlock()
		return fmt.Errorf("%w: no active partition %q (active: %s)", ErrUnknownPartition, name, strings.Join(n.partitionNamesLocked(), ", "))
	}
	delete(n.partitions, name)
	n.mu.Unlock()
	if err := n.applyRules(ctx, tPartitions, p.involves); err != nil {
		return fmt.Errorf("podnet: heal partition %q: rules not removed everywhere: %w", name, err)
	}
	n.log.Debug("partition healed", "name", name)
	return nil
}

func (n *Network) partitionNamesLocked() []string {
	names := make([]string, 0, len(n.partitions))
	for name := range n.partitions {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Close removes every sandbox and the bridge.
func (n *Network) Close(ctx context.Context) error {
	n.mu.Lock()
	if n.released {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	sbs := make([]*sandbox, 0, len(n.sandboxes))
	for _, sb := range n.sandboxes {
		sbs = append(sbs, sb)
	}
	n.mu.Unlock()

	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
		sem  = make(chan struct{}, applyParallelism)
	)
	for _, sb := range sbs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := n.removeSandbox(sb); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("podnet: close (call Close again or Cleanup): %w", err)
	}
	// Whatever is left on disk or in the kernel (nothing, normally) goes the
	// same way as after a crash.
	if err := cleanup(ctx, n.host, n.cfg, n.log); err != nil {
		return fmt.Errorf("podnet: close (call Close again or Cleanup): %w", err)
	}
	n.mu.Lock()
	n.released = true
	n.mu.Unlock()
	n.host.Close()
	n.log.Debug("pod network closed", "bridge", n.bridge)
	return nil
}

// Cleanup removes whatever a Network with cfg left behind after its owner died:
// namespace files (unmounted), their veths and the bridge. It is idempotent.
func Cleanup(ctx context.Context, cfg Config) error {
	cfg, err := cfg.normalize(false)
	if err != nil {
		return err
	}
	host, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("podnet: open netlink socket: %w", err)
	}
	defer host.Close()
	return cleanup(ctx, host, cfg, cfg.Logger.With("cluster", cfg.Name))
}
