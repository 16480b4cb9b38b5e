package local

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/coredns"
	"github.com/gauntlet-dev/gauntlet/internal/pki"
)

// clusterDomain is the embedded cluster's DNS domain.
const clusterDomain = "cluster.local"

const (
	// dnsUser is the API user CoreDNS authenticates as (a client certificate).
	dnsUser = "gauntlet:coredns"
	// dnsSliceManager marks the kube-dns EndpointSlice as the cluster's own.
	dnsSliceManager = "gauntlet-cluster-local"
)

// dnsServiceIP is the kube-dns Service's ClusterIP in a Service range: its 10th
// address, as kubeadm chooses it.
func dnsServiceIP(serviceCIDR netip.Prefix) netip.Addr {
	a := serviceCIDR.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	return a
}

// startDNS runs the cluster's CoreDNS on the bridge's host address and publishes
// it as a real cluster does: the Service kube-system/kube-dns with the fixed
// ClusterIP that pods' resolv.conf names (dnsServiceIP), here selectorless, with
// an EndpointSlice pointing at the host-side listener. Pods reach it through
// their Service proxy (the ClusterIP is DNATed to the bridge address, which the
// egress guard lets through like the API server). It returns once CoreDNS is
// started; Create waits for it with WaitReady.
func (c *Cluster) startDNS(ctx, bgCtx context.Context, bin string, gw netip.Addr) error {
	dir := filepath.Join(c.info.Dir, "coredns")
	if err := ensureDNSRBAC(ctx, c.client); err != nil {
		return err
	}
	kubeconfig, err := c.writeDNSKubeconfig(dir)
	if err != nil {
		return err
	}
	port, err := coredns.PickPort(gw)
	if err != nil {
		return fmt.Errorf("local: cluster DNS: %w", err)
	}
	c.dns, err = coredns.Start(ctx, coredns.Config{
		Binary: bin, Dir: dir, Listen: netip.AddrPortFrom(gw, port), Kubeconfig: kubeconfig,
		Domain: clusterDomain, Log: c.log.With("component", "coredns"),
	})
	if err != nil {
		return fmt.Errorf("local: cluster DNS: %w", err)
	}
	c.bg.Go(func() {
		select {
		case err := <-c.dns.Failed():
			c.log.Error("cluster degraded: DNS died", "err", err)
		case <-bgCtx.Done():
		}
	})
	return ensureDNSService(ctx, c.client, dnsServiceIP(c.info.ServiceCIDR), netip.AddrPortFrom(gw, port))
}

// writeDNSKubeconfig issues CoreDNS's client certificate and writes its kubeconfig.
func (c *Cluster) writeDNSKubeconfig(dir string) (string, error) {
	pair, err := c.cp.CA().Issue(pki.Request{CommonName: dnsUser, Client: true})
	if err != nil {
		return "", fmt.Errorf("local: cluster DNS certificate: %w", err)
	}
	name := "gauntlet-" + c.info.Name
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: c.cp.Server(), CertificateAuthorityData: c.cp.CA().CertPEM}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: pair.CertPEM, ClientKeyData: pair.KeyPEM}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("local: cluster DNS kubeconfig: %w", err)
	}
	return path, nil
}

// ensureDNSRBAC grants CoreDNS's user what kubeadm grants its ServiceAccount
// (ClusterRole system:coredns).
func ensureDNSRBAC(ctx context.Context, client kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: dnsUser}},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create the system:coredns ClusterRole: %w", err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create the system:coredns ClusterRoleBinding: %w", err)
	}
	return nil
}

// ensureDNSService creates kube-system/kube-dns (ports dns/UDP and dns-tcp/TCP
// 53, ClusterIP ip) and its EndpointSlice naming the listener ep.
func ensureDNSService(ctx context.Context, client kubernetes.Interface, ip netip.Addr, ep netip.AddrPort) error {
	ns := metav1.NamespaceSystem
	// The API server makes kube-system shortly after it is ready; do not wait for it.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create namespace %s: %w", ns, err)
	}
	labels := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS"}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: ns, Labels: labels},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: ip.String(),
			Ports: []corev1.ServicePort{
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(int32(ep.Port()))},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(int32(ep.Port()))},
			},
		},
	}
	if _, err := client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create Service %s/kube-dns with ClusterIP %s: %w", ns, ip, err)
	}
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	port := int32(ep.Port())
	sliceLabels := map[string]string{
		discoveryv1.LabelServiceName: "kube-dns",
		discoveryv1.LabelManagedBy:   dnsSliceManager,
		"k8s-app":                    "kube-dns",
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kube-dns-coredns", Namespace: ns, Labels: sliceLabels},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ep.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true), Serving: ptrTo(true), Terminating: ptrTo(false)},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptrTo("dns"), Protocol: &udp, Port: &port},
			{Name: ptrTo("dns-tcp"), Protocol: &tcp, Port: &port},
		},
	}
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create the kube-dns EndpointSlice: %w", err)
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
