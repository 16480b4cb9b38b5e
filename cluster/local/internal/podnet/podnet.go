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
	"context"
	"errors"
	"net/netip"
)

// ErrNotImplemented marks a contract stub that is not written yet.
var ErrNotImplemented = errors.New("podnet: not implemented")

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
}

// Network is one cluster's bridge and its pod sandboxes.
type Network struct{}

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
func Create(ctx context.Context, cfg Config) (*Network, error) { return nil, ErrNotImplemented }

// Gateway is the bridge's address: the host as seen from pods.
func (n *Network) Gateway() netip.Addr { return netip.Addr{} }

// BridgeName is the bridge interface's name.
func (n *Network) BridgeName() string { return "" }

// AddSandbox creates a pod namespace with an address, loopback up, a default route
// via the gateway, the egress guard, the current Services and any active partition
// that names its address.
func (n *Network) AddSandbox(ctx context.Context, id string) (*Sandbox, error) {
	return nil, ErrNotImplemented
}

// RemoveSandbox deletes a pod namespace and frees its address. Unknown IDs are not an error.
func (n *Network) RemoveSandbox(ctx context.Context, id string) error { return ErrNotImplemented }

// SetServices replaces the Service proxy rules in every sandbox (and in sandboxes
// added later) so that connections to a ClusterIP:port reach one of its endpoints.
func (n *Network) SetServices(ctx context.Context, svcs []Service) error { return ErrNotImplemented }

// Partition drops all traffic between the addresses in a and those in b, in both
// directions, in every sandbox whose address is in a or b (now or added later).
// The gateway address stands for the host, including the API server. name
// identifies the partition for Heal; reusing an active name is an error.
func (n *Network) Partition(ctx context.Context, name string, a, b []netip.Addr) error {
	return ErrNotImplemented
}

// Heal removes the partition called name.
func (n *Network) Heal(ctx context.Context, name string) error { return ErrNotImplemented }

// Close removes every sandbox and the bridge.
func (n *Network) Close(ctx context.Context) error { return ErrNotImplemented }

// Cleanup removes whatever a Network with cfg left behind after its owner died:
// namespace files (unmounted), their veths and the bridge. It is idempotent.
func Cleanup(ctx context.Context, cfg Config) error { return ErrNotImplemented }
