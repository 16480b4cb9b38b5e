package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/coredns"
	"github.com/gauntlet-dev/gauntlet/internal/pidfile"
)

// envResolve turns the test binary, run as a pod (image gauntlet-test/incluster),
// into a resolver client: it looks up each name in the variable with Go's own
// resolver (as operators built with CGO_ENABLED=0 do) and prints one line per name.
const envResolve = "GAUNTLET_E2E_RESOLVE"

func resolveMain() int {
	r := &net.Resolver{PreferGo: true}
	for _, name := range strings.Fields(os.Getenv(envResolve)) {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		addrs, err := r.LookupHost(ctx, name)
		cancel()
		if err != nil {
			var de *net.DNSError
			fmt.Printf("%s ERR notfound=%v %dms %v\n", name, errors.As(err, &de) && de.IsNotFound, time.Since(start).Milliseconds(), err)
			continue
		}
		fmt.Printf("%s OK %s\n", name, strings.Join(addrs, ","))
	}
	return 0
}

// getent resolves name in pod with glibc (getent hosts, which reads the
// container's /etc/resolv.conf) and returns its addresses, the exit code and the time taken.
func getent(t *testing.T, c *Cluster, ns, pod, name string) ([]string, int, time.Duration) {
	t.Helper()
	start := time.Now()
	out, errOut, err := execPod(c, ns, pod, "main", "getent", "hosts", name)
	took := time.Since(start)
	if err != nil {
		var exitErr interface{ ExitStatus() int }
		if errors.As(err, &exitErr) {
			return nil, exitErr.ExitStatus(), took
		}
		t.Fatalf("exec getent hosts %s in %s: %v (%s)", name, pod, err, errOut)
	}
	var addrs []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			addrs = append(addrs, f[0])
		}
	}
	return addrs, 0, took
}

// TestE2EClusterDNS: pods resolve Services (short, namespaced and full names)
// to their ClusterIPs and a headless Service's pod record to the pod's IP,
// through the kube-dns Service, over UDP and TCP, with glibc and with Go's
// resolver; unknown names fail at once; dnsPolicy None and Default behave as
// on a real node.
func TestE2EClusterDNS(t *testing.T) {
	c := cluster(t)
	ctx := context.Background()
	cs := c.Client()
	ns := namespace(t, c, "dns")

	// kube-dns as on a kubeadm cluster: the 10th address of the Service range.
	kubeDNS, err := cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if kubeDNS.Spec.ClusterIP != "10.96.0.10" {
		t.Fatalf("kube-dns ClusterIP = %s, want 10.96.0.10", kubeDNS.Spec.ClusterIP)
	}
	slices, err := cs.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
	if err != nil || len(slices.Items) != 1 || len(slices.Items[0].Endpoints) != 1 || slices.Items[0].Endpoints[0].Addresses[0] != c.net.Gateway().String() {
		t.Fatalf("kube-dns EndpointSlices = %+v, %v; want one naming the bridge address %s", slices, err, c.net.Gateway())
	}

	web := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	db := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Port: 6379}}},
	}
	for _, s := range []*corev1.Service{web, db} {
		if _, err := cs.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	webSvc, err := cs.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	webIP := webSvc.Spec.ClusterIP

	createPod(t, c, shellPod(ns, "db-0", "exec sleep 3600", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "db"}
		p.Spec.Hostname, p.Spec.Subdomain = "db-0", "db"
	}))
	createPod(t, c, shellPod(ns, "client", "exec sleep 3600", nil))
	createPod(t, c, shellPod(ns, "tcp-client", "exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "use-vc"}}}
	}))
	createPod(t, c, shellPod(ns, "policy-none", "exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSNone
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10"}, Searches: []string{ns + ".svc.cluster.local"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}}}
	}))
	createPod(t, c, shellPod(ns, "policy-default", "exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSDefault
	}))
	createPod(t, c, shellPod(ns, "policy-default-config", "exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.DNSPolicy = corev1.DNSDefault
		p.Spec.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"extra.example"}}
	}))
	var dbIP string
	for _, name := range []string{"db-0", "client", "tcp-client", "policy-none", "policy-default", "policy-default-config"} {
		p := waitPod(t, c, ns, name, time.Minute, ready)
		if name == "db-0" {
			dbIP = p.Status.PodIP
		}
	}

	// resolv.conf as a kubelet writes it for ClusterFirst.
	out, _, err := execPod(c, ns, "client", "main", "cat", "/etc/resolv.conf")
	if want := "search dns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"; err != nil || out != want {
		t.Fatalf("client's /etc/resolv.conf = %q (%v), want %q", out, err, want)
	}

	// Wait until the headless Service's EndpointSlice names db-0 ready: a name
	// asked for before would be cached as missing for up to 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		sl, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=db"})
		if err == nil && len(sl.Items) > 0 && len(sl.Items[0].Endpoints) == 1 {
			e := sl.Items[0].Endpoints[0]
			if e.Hostname != nil && *e.Hostname == "db-0" && e.Conditions.Ready != nil && *e.Conditions.Ready {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the db EndpointSlice never named db-0 ready: %+v %v", sl, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	for _, tc := range []struct {
		pod, name, want string
	}{
		{"client", "web", webIP},
		{"client", "web.dns", webIP},
		{"client", "web.dns.svc", webIP},
		{"client", "web.dns.svc.cluster.local", webIP},
		{"client", "kubernetes.default", "10.96.0.1"},
		{"client", "kube-dns.kube-system.svc.cluster.local", "10.96.0.10"},
		{"client", "db-0.db.dns.svc.cluster.local", dbIP},
		{"client", "db-0.db", dbIP},
		{"client", "db", dbIP}, // a headless Service's name: its ready pods
		{"tcp-client", "web", webIP},
		{"tcp-client", "db-0.db.dns.svc.cluster.local", dbIP},
		{"policy-none", "web", webIP},
	} {
		addrs, code, took := getent(t, c, ns, tc.pod, tc.name)
		if code != 0 || len(addrs) == 0 || addrs[0] != tc.want {
			t.Errorf("%s: getent hosts %s = %v (exit %d, %v), want %s", tc.pod, tc.name, addrs, code, took, tc.want)
		}
	}
	// Reverse lookups of a ClusterIP and of a headless Service's pod.
	if out, _, err := execPod(c, ns, "client", "main", "getent", "hosts", webIP); err != nil || !strings.Contains(out, "web.dns.svc.cluster.local") {
		t.Errorf("reverse lookup of %s = %q, %v; want web.dns.svc.cluster.local", webIP, out, err)
	}
	if out, _, err := execPod(c, ns, "client", "main", "getent", "hosts", dbIP); err != nil || !strings.Contains(out, "db-0.db.dns.svc.cluster.local") {
		t.Errorf("reverse lookup of %s = %q, %v; want db-0.db.dns.svc.cluster.local", dbIP, out, err)
	}
	// Unknown names, in the cluster domain and outside it (no upstream here), fail
	// with an answer (NXDOMAIN), not by the resolver timing out: glibc's timeout
	// is 5 s per try with 2 attempts, so an unanswered query takes at least 10 s.
	for _, name := range []string{"nosuch", "nosuch.dns.svc.cluster.local", "db-9.db.dns.svc.cluster.local", "example.com", "gauntlet.invalid."} {
		addrs, code, took := getent(t, c, ns, "client", name)
		if code != 2 || len(addrs) != 0 || took >= 10*time.Second {
			t.Errorf("getent hosts %s = %v, exit %d after %v; want exit 2 (not found) answered, not timed out (10 s)", name, addrs, code, took)
		}
	}

	// dnsPolicy None takes dnsConfig as it is; Default keeps the node's resolver.
	out, _, err = execPod(c, ns, "policy-none", "main", "cat", "/etc/resolv.conf")
	if want := "search dns.svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:2\n"; err != nil || out != want {
		t.Errorf("dnsPolicy None: /etc/resolv.conf = %q (%v), want %q", out, err, want)
	}
	out, _, err = execPod(c, ns, "policy-default", "main", "cat", "/etc/resolv.conf")
	host, _ := os.ReadFile("/etc/resolv.conf")
	if err != nil || out != string(host) {
		t.Errorf("dnsPolicy Default: /etc/resolv.conf = %q (%v), want the host's %q", out, err, host)
	}
	out, _, err = execPod(c, ns, "policy-default-config", "main", "cat", "/etc/resolv.conf")
	if err != nil || !strings.Contains(out, "extra.example") || strings.Contains(out, "10.96.0.10") {
		t.Errorf("dnsPolicy Default with dnsConfig: /etc/resolv.conf = %q (%v), want the host's resolver plus the search extra.example", out, err)
	}
	for _, line := range strings.Split(string(host), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "nameserver" && !strings.Contains(out, line) {
			t.Errorf("dnsPolicy Default with dnsConfig: /etc/resolv.conf = %q lacks the host's %q", out, line)
		}
	}

	// Go's resolver, as an operator uses it, in a pod of its own.
	goPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "go-resolver", Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "app", Image: "gauntlet-test/incluster:1",
				Env: []corev1.EnvVar{{Name: envResolve, Value: "web web.dns.svc.cluster.local db-0.db nosuch example.com"}}}},
		},
	}
	createPod(t, c, goPod)
	waitPod(t, c, ns, "go-resolver", time.Minute, func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	})
	logs := podLogs(t, c, ns, "go-resolver")
	for _, want := range []string{"web OK " + webIP, "web.dns.svc.cluster.local OK " + webIP, "db-0.db OK " + dbIP, "nosuch ERR notfound=true", "example.com ERR notfound=true"} {
		if !strings.Contains(logs, want) {
			t.Errorf("Go resolver in a pod: logs lack %q:\n%s", want, logs)
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		var name string
		var ms int
		if n, _ := fmt.Sscanf(line, "%s ERR notfound=true %dms", &name, &ms); n == 2 && ms > 2000 {
			t.Errorf("Go resolver: %s failed only after %d ms, want at once", name, ms)
		}
	}
	t.Logf("coredns (pid %d) RSS after the test's lookups: %d KiB", c.dns.PID(), rssKiB(c.dns.PID()))
}

// requireDNSRecord fails unless the snapshot of a cluster's process records
// (snapshotRecords) holds CoreDNS's, so the leftover checks cover it.
func requireDNSRecord(t *testing.T, records string) {
	t.Helper()
	entries, _ := os.ReadDir(records)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "-coredns"+pidfile.Suffix) {
			return
		}
	}
	t.Fatalf("no CoreDNS process record among %s", records)
}

// TestE2EDNSBinaryMissing: with GAUNTLET_COREDNS_BIN naming nothing, Create
// fails at once with an error that says how to get CoreDNS.
func TestE2EDNSBinaryMissing(t *testing.T) {
	skipUnlessE2E(t)
	t.Setenv(coredns.EnvBin, filepath.Join(t.TempDir(), "missing"))
	root := t.TempDir()
	_, err := Create(context.Background(), Options{Name: "e2e-nodns", StateRoot: root, Nodes: 1})
	if !errors.Is(err, coredns.ErrBinaryMissing) || !strings.Contains(err.Error(), "make coredns") {
		t.Fatalf("err = %v, want ErrBinaryMissing naming `make coredns`", err)
	}
	if infos, _ := List(root); len(infos) != 0 {
		t.Fatalf("a failed Create left %v", infos)
	}
}
