package local

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/gauntlet-dev/gauntlet/internal/pki"
)

// ListenForPods listens on a free port of the host address the cluster's pods
// reach (the bridge's) and returns the listener with a serving certificate for
// that address signed by the cluster's CA, the CA pods trust for the API
// server: an operator's in-cluster configuration can then be pointed at a proxy
// there (KUBERNETES_SERVICE_HOST and _PORT). The port counts as the API
// server's for PartitionFromAPIServer, so a partition still cuts an operator
// that goes through the proxy. The caller closes the listener.
func (c *Cluster) ListenForPods(ctx context.Context) (net.Listener, tls.Certificate, error) {
	gw := c.net.Gateway()
	pair, err := c.cp.CA().Issue(pki.Request{
		CommonName: "gauntlet-pod-listener", IPs: []net.IP{gw.AsSlice()},
		DNSNames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc"}, Server: true,
	})
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("local: serving certificate for pods: %w", err)
	}
	cert, err := pair.TLSCertificate()
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(gw.String(), "0"))
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("local: listen for pods on %s: %w", gw, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	c.podPortsMu.Lock()
	c.podAPIPorts = append(c.podAPIPorts, uint16(port))
	c.podPortsMu.Unlock()
	return ln, cert, nil
}

// apiPorts are the API server's port and those of the proxies to it.
func (c *Cluster) apiPorts() []uint16 {
	c.podPortsMu.Lock()
	defer c.podPortsMu.Unlock()
	return append([]uint16{uint16(c.apiPort)}, c.podAPIPorts...)
}
