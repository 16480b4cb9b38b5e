// Command coredns is CoreDNS, from the pinned upstream module, with the plugins
// the embedded cluster's DNS uses compiled in: the upstream main
// (github.com/coredns/coredns/coredns.go) imports every plugin of plugin.cfg,
// which drags in cloud SDKs (route53, azure, clouddns), etcd, dnstap, tracing and
// more that a cluster DNS without external network never runs. The plugin order
// stays upstream's (core/dnsserver's Directives, generated from plugin.cfg); only
// the set of compiled plugins is smaller.
package main

import (
	_ "github.com/coredns/coredns/core/dnsserver" // the DNS server type and upstream's plugin order
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/template"
)

func main() { coremain.Run() }
