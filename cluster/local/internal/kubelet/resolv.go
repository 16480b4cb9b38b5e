package kubelet

import (
	"os"
	"strings"
)

// hostResolvConf is the node's resolver configuration, which dnsPolicy Default
// inherits (the kubelet's --resolv-conf default).
const hostResolvConf = "/etc/resolv.conf"

// parseResolvConf returns the nameservers, search domains and options
// ("name" or "name:value") of a resolv.conf; a missing file gives none.
func parseResolvConf(path string) (servers, searches, options []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			servers = append(servers, f[1])
		case "search", "domain": // the last of either wins, as in glibc
			searches = append([]string(nil), f[1:]...)
		case "options":
			options = append(options, f[1:]...)
		}
	}
	return servers, searches, options
}
