package podnet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// allocateLocked returns the lowest free host address that is not the gateway.
func (n *Network) allocateLocked() (netip.Addr, bool) {
	bcast := broadcastOf(n.cfg.CIDR)
	for ip := n.gateway.Next(); ip.Less(bcast); ip = ip.Next() {
		if _, taken := n.used[ip]; !taken {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// forget drops a torn-down sandbox from memory. Caller holds sb.mu.
func (n *Network) forget(sb *sandbox) {
	sb.gone = true
	n.mu.Lock()
	if n.sandboxes[sb.rec.ID] == sb {
		delete(n.sandboxes, sb.rec.ID)
		delete(n.used, sb.rec.IP)
	}
	n.mu.Unlock()
}

// setupSandbox builds the namespace, veth and rules of one sandbox.
func (n *Network) setupSandbox(ctx context.Context, rec sandboxRecord, script string) error {
	if err := n.dirs.writeRecord(rec); err != nil {
		return err
	}
	nsh, err := newNetNS(rec.NetNS)
	if err != nil {
		return err
	}
	defer nsh.Close()

	// Load the rules (an exec, the slowest step) while the links are made.
	nftDone := make(chan error, 1)
	go func() { nftDone <- n.nft.load(ctx, rec.NetNS, script) }()
	eth0, linkErr := n.setupLinks(nsh, rec)
	if err := errors.Join(linkErr, <-nftDone); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The default route comes last: before it, and before the guard is in
	// place, no packet can leave the namespace for anywhere but the pod CIDR.
	route := &netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: n.gateway.AsSlice()}
	if err := nsh.RouteAdd(route); err != nil {
		return fmt.Errorf("podnet: add default route via %s: %w", n.gateway, err)
	}
	return nil
}

// setupLinks creates the veth pair with its peer directly inside the
// namespace as eth0 (one netlink request: no move, no rename), then addresses
// eth0 and brings it up.
func (n *Network) setupLinks(nsh *netlink.Handle, rec sandboxRecord) (netlink.Link, error) {
	ns, err := netns.GetFromPath(rec.NetNS)
	if err != nil {
		return nil, fmt.Errorf("podnet: open namespace file: %w", err)
	}
	defer ns.Close()
	la := netlink.NewLinkAttrs()
	la.Name = rec.HostVeth
	la.MasterIndex = n.bridgeIndex
	la.Flags = net.FlagUp
	veth := &netlink.Veth{
		LinkAttrs:        la,
		PeerName:         podIfName,
		PeerHardwareAddr: macFor(rec.IP),
		PeerNamespace:    netlink.NsFd(ns),
	}
	if err := n.host.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("podnet: create veth %s on bridge %s: %w", rec.HostVeth, n.bridge, err)
	}
	eth0, err := nsh.LinkByName(podIfName)
	if err != nil {
		return nil, fmt.Errorf("podnet: find %s in the pod namespace: %w", podIfName, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: rec.IP.AsSlice(), Mask: net.CIDRMask(n.cfg.CIDR.Bits(), 32)}}
	if err := nsh.AddrAdd(eth0, addr); err != nil {
		return nil, fmt.Errorf("podnet: add address %s to %s: %w", addr, podIfName, err)
	}
	if err := nsh.LinkSetUp(eth0); err != nil {
		return nil, fmt.Errorf("podnet: bring %s up: %w", podIfName, err)
	}
	return eth0, nil
}

// teardownSandbox removes what setupSandbox may have made; idempotent. The
// host veth goes first, which takes its peer along and cuts the pod off even
// if a process still holds the namespace.
func (n *Network) teardownSandbox(rec sandboxRecord) error {
	if err := deleteLinkByName(n.host, rec.HostVeth); err != nil {
		return err
	}
	if err := removeNetNSFile(rec.NetNS); err != nil {
		return err
	}
	return n.dirs.removeRecord(rec.ID)
}
