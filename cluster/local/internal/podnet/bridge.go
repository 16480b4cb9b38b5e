package podnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

func (n *Network) create() error {
	switch _, err := n.host.LinkByName(n.bridge); {
	case err == nil:
		return fmt.Errorf("%w: %s (cluster %q) is already there: if an earlier run of this cluster died, call Cleanup (gauntlet cluster gc); otherwise pick another cluster name", ErrBridgeExists, n.bridge, n.cfg.Name)
	case !isLinkNotFound(err):
		return fmt.Errorf("podnet: look up bridge %s: %w", n.bridge, err)
	}
	left, err := n.dirs.leftovers()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("%w: found %s: call Cleanup (gauntlet cluster gc) for cluster %q first", ErrLeftovers, summarize(left, 3), n.cfg.Name)
	}
	if err := n.checkOverlap(0); err != nil {
		return err
	}
	if err := os.MkdirAll(n.dirs.netns, 0o755); err != nil {
		return fmt.Errorf("podnet: create namespace folder: %w", err)
	}
	if err := os.MkdirAll(n.dirs.records, 0o700); err != nil {
		return fmt.Errorf("podnet: create record folder: %w", err)
	}
	if err := n.createBridge(); err != nil {
		return errors.Join(err, n.deleteBridge())
	}
	// Two clusters created at once with the same CIDR both pass the first
	// check; looking again after adding the address catches that (both fail).
	if err := n.checkOverlap(n.bridgeIndex); err != nil {
		return errors.Join(err, n.deleteBridge())
	}
	if err := makeSharedMountDir(n.dirs.netns); err != nil {
		return errors.Join(err, n.deleteBridge(), unmountAll(n.dirs.netns))
	}
	return nil
}

func (n *Network) createBridge() error {
	la := netlink.NewLinkAttrs()
	la.Name = n.bridge
	// A bridge without a fixed MAC takes the lowest MAC of its ports, so the
	// gateway's MAC would change as pods come and go and stale ARP entries in
	// pods would black-hole traffic to the host.
	la.HardwareAddr = macFor(n.gateway)
	if err := n.host.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil {
		return fmt.Errorf("podnet: create bridge %s: %w", n.bridge, err)
	}
	br, err := n.host.LinkByName(n.bridge)
	if err != nil {
		return fmt.Errorf("podnet: look up new bridge %s: %w", n.bridge, err)
	}
	n.bridgeIndex = br.Attrs().Index
	// IPv4 only; spare the host's IPv6 autoconfiguration on the bridge.
	// Best effort: hosts without IPv6 have no such file.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+n.bridge+"/disable_ipv6", []byte("1"), 0)
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: n.gateway.AsSlice(), Mask: net.CIDRMask(n.cfg.CIDR.Bits(), 32)}}
	if err := n.host.AddrAdd(br, addr); err != nil {
		return fmt.Errorf("podnet: add gateway address %s to bridge %s: %w", addr, n.bridge, err)
	}
	if err := n.host.LinkSetUp(br); err != nil {
		return fmt.Errorf("podnet: bring bridge %s up: %w", n.bridge, err)
	}
	return nil
}

// checkOverlap refuses a CIDR that overlaps an IPv4 address or a non-default
// route (any table) on the host, ignoring the link with index skip.
func (n *Network) checkOverlap(skip int) error {
	cidr := n.cfg.CIDR
	fix := "pick another pod CIDR for this cluster (or remove what uses it)"
	addrs, err := retryDump(func() ([]netlink.Addr, error) { return n.host.AddrList(nil, netlink.FAMILY_V4) })
	if err != nil {
		return fmt.Errorf("podnet: list host addresses: %w", err)
	}
	for _, a := range addrs {
		p, ok := ipNetPrefix(a.IPNet)
		if !ok || a.LinkIndex == skip || !prefixOverlaps(p, cidr) {
			continue
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return fmt.Errorf("%w: %s overlaps address %s/%d on %s: %s", ErrCIDROverlap, cidr, ip.Unmap(), p.Bits(), n.linkName(a.LinkIndex), fix)
	}
	routes, err := retryDump(func() ([]netlink.Route, error) {
		return n.host.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Table: unix.RT_TABLE_UNSPEC}, netlink.RT_FILTER_TABLE)
	})
	if err != nil {
		return fmt.Errorf("podnet: list host routes: %w", err)
	}
	for _, r := range routes {
		p, ok := ipNetPrefix(r.Dst)
		if !ok || p.Bits() == 0 || (skip != 0 && r.LinkIndex == skip) || !prefixOverlaps(p, cidr) {
			continue // default routes cover everything and are fine
		}
		return fmt.Errorf("%w: %s overlaps route %s (table %d, dev %s): %s", ErrCIDROverlap, cidr, p, r.Table, n.linkName(r.LinkIndex), fix)
	}
	return nil
}

func (n *Network) linkName(index int) string {
	if index == 0 {
		return "none"
	}
	l, err := n.host.LinkByIndex(index)
	if err != nil {
		return fmt.Sprintf("ifindex %d", index)
	}
	return l.Attrs().Name
}

func (n *Network) deleteBridge() error { return deleteLinkByName(n.host, n.bridge) }
