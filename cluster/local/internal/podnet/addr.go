package podnet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"regexp"
)

// Interface names. Linux limits them to 15 bytes (IFNAMSIZ-1). Every name
// derives from a 7-hex-digit hash of the cluster name so that clusters side by
// side never collide and Cleanup can find a dead cluster's veths by prefix:
//
//	bridge:    "gt" + hash              (9 bytes)
//	host veth: "gv" + hash + hex(index) (≤ 15 bytes for CIDRs of /8 or smaller),
//
// where index is the pod address's offset inside the CIDR.
const (
	bridgePrefix = "gt"
	vethPrefix   = "gv"
	hashLen      = 7
	maxIfName    = 15
	podIfName    = "eth0"

	minPrefixBits = 8  // the veth name has room for 6 hex digits of offset
	maxPrefixBits = 30 // network, gateway, one pod, broadcast
)

func clusterHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:hashLen]
}

func bridgeName(cluster string) string { return bridgePrefix + clusterHash(cluster) }

func vethNamePrefix(cluster string) string { return vethPrefix + clusterHash(cluster) }

// vethName names the host end of a pod's veth after its address, so that a
// name is free again exactly when the address is.
func vethName(cluster string, cidr netip.Prefix, ip netip.Addr) string {
	return fmt.Sprintf("%s%x", vethNamePrefix(cluster), addrOffset(cidr, ip))
}

// addrOffset is ip's distance from the CIDR's network address.
func addrOffset(cidr netip.Prefix, ip netip.Addr) uint32 {
	return addrUint(ip) - addrUint(cidr.Masked().Addr())
}

func addrUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func uintAddr(v uint32) netip.Addr {
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// gatewayOf is the CIDR's first host address.
func gatewayOf(cidr netip.Prefix) netip.Addr { return cidr.Masked().Addr().Next() }

// broadcastOf is the CIDR's last address.
func broadcastOf(cidr netip.Prefix) netip.Addr {
	c := cidr.Masked()
	return uintAddr(addrUint(c.Addr()) | (1<<(32-c.Bits()) - 1))
}

// macFor derives a stable, locally administered unicast MAC from an IPv4
// address (0a:58:<ip>, the convention of the CNI bridge plugin). A pod that
// gets a recycled address also gets the same MAC, so stale neighbour entries
// in other pods and on the host stay correct.
func macFor(ip netip.Addr) net.HardwareAddr {
	b := ip.As4()
	return net.HardwareAddr{0x0a, 0x58, b[0], b[1], b[2], b[3]}
}

func prefixOverlaps(a, b netip.Prefix) bool { return a.Masked().Overlaps(b.Masked()) }

// ipNetPrefix converts a kernel address or route destination.
func ipNetPrefix(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	a = a.Unmap()
	if !a.Is4() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones).Masked(), true
}

// idPattern is what a sandbox ID may look like: it becomes a file name.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$`)

func validateID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("podnet: invalid sandbox ID %q: use 1-200 letters, digits, '_', '.' or '-', not starting with '.' or '-' (a pod UID fits)", id)
	}
	return nil
}
