// Package local is Gauntlet's default cluster back end: a real Kubernetes control
// plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler built from
// pinned upstream modules) whose nodes are virtual-kubelet node agents that run pod
// containers as local processes, each pod in its own network namespace on a
// per-cluster bridge, resolving names through the cluster's CoreDNS (the kube-dns
// Service). Several clusters run side by side; Delete, and GC after the owner
// died, leave nothing behind.
package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	cl "github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/hoststate"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
	"github.com/gauntlet-dev/gauntlet/cluster/internal/controlplane"
	"github.com/gauntlet-dev/gauntlet/cluster/internal/images"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/coredns"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/kubelet"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/podnet"
	"github.com/gauntlet-dev/gauntlet/cluster/local/internal/storage"
	"github.com/gauntlet-dev/gauntlet/internal/pki"
)

// Errors a caller can act on; each message states the invariant and the fix.
var (
	ErrNotRoot     = fmt.Errorf("%w: the embedded cluster needs root (network and mount namespaces): run as root, e.g. with sudo", cl.ErrUnavailable)
	ErrExists      = errors.New("a cluster with this name already exists")
	ErrNotFound    = cl.ErrNotFound
	ErrBadName     = errors.New("cluster names are lowercase letters, digits and '-', start with a letter, at most 20 characters")
	ErrUnsupported = errors.New("not supported by the embedded cluster")
)

// Options configure Create. The zero value gives a three-node cluster named "gauntlet".
type Options struct {
	// Name of the cluster (default "gauntlet").
	Name string
	// StateRoot is the folder holding every cluster's state (default StateRoot("")).
	StateRoot string
	// Nodes is the number of nodes (default 3), named node-1 … node-N, in zones
	// zone-a, zone-b, zone-c … round robin.
	Nodes int
	// NodeCapacity is what each node advertises (default cpu 4, memory 8Gi, pods 110,
	// ephemeral-storage 50Gi).
	NodeCapacity corev1.ResourceList
	// StorageCapacity bounds the sum of provisioned volumes (default 100Gi).
	StorageCapacity resource.Quantity
	// APIServerPort is the API server's port (default: a free one). A port in use is an error.
	APIServerPort int
	// MappingFile is a user image-mapping file merged in front of the defaults.
	MappingFile string
	// MappingRules are image-mapping rules (a target's imageMapping) tried after
	// MappingFile's and before the shipped defaults.
	MappingRules []imagemap.Rule
	// OperatorBinary is the bundled operator's binary, the target of its image mapping.
	OperatorBinary string
	// Log receives progress (default: discarded).
	Log *slog.Logger
}

// Cluster is a running embedded cluster.
type Cluster struct {
	info    Info
	log     *slog.Logger
	cp      *controlplane.ControlPlane
	dns     *coredns.Server
	dnsIP   netip.Addr
	net     *podnet.Network
	nodes   []*kubelet.Node
	client  kubernetes.Interface
	cancel  context.CancelFunc
	bg      sync.WaitGroup
	once    sync.Once
	delErr  error
	timings map[string]time.Duration
	apiPort int
	// podAPIPorts are the ports of ListenForPods' listeners (proxies to the API server).
	podPortsMu  sync.Mutex
	podAPIPorts []uint16
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]{0,19}$`)

const serviceCIDR = "10.96.0.0/16"

// Create brings a cluster up and returns once every node is Ready.
func Create(ctx context.Context, opts Options) (c *Cluster, err error) {
	t0 := time.Now()
	opts = withDefaults(opts)
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	if !nameRE.MatchString(opts.Name) {
		return nil, fmt.Errorf("%w: %q", ErrBadName, opts.Name)
	}
	mapping, err := loadMapping(opts)
	if err != nil {
		return nil, err
	}
	if opts.APIServerPort != 0 {
		// Checked on every address: the API server binds the bridge address, which does not exist yet.
		if err := controlplane.CheckPortFree("0.0.0.0", opts.APIServerPort); err != nil {
			return nil, fmt.Errorf("local: API server port: %w", err)
		}
	}
	type binResult struct {
		b   controlplane.Binaries
		dns string
		err error
	}
	binCh := make(chan binResult, 1)
	go func() {
		dnsCh := make(chan binResult, 1)
		go func() {
			dns, err := coredns.FindBinary(ctx)
			dnsCh <- binResult{dns: dns, err: err}
		}()
		b, err := controlplane.FindBinaries(ctx)
		d := <-dnsCh
		binCh <- binResult{b, d.dns, errors.Join(err, d.err)}
	}()

	unlockHost, err := lockHost(ctx)
	if err != nil {
		<-binCh
		return nil, err
	}
	hostLocked := true
	defer func() {
		if hostLocked {
			unlockHost()
		}
	}()
	info, err := reserve(opts)
	if err != nil {
		<-binCh
		return nil, err
	}
	c = &Cluster{info: info, log: opts.Log.With("cluster", opts.Name), timings: map[string]time.Duration{}}
	// Every cluster's pods share the host kernel's per-user inotify budget
	// (a real node keeps one for its own pods): raise it where it is the
	// kernel's small default, and say so.
	if err := hoststate.RaiseKernelLimits(c.log, hoststate.ProcSys, hoststate.InotifyMinimums()); err != nil {
		c.log.Warn("could not raise the host's inotify limits; config reloaders and other watchers may fail with \"too many open files\"", "err", err)
	}
	bgCtx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	defer func() {
		if err != nil {
			if derr := c.Delete(context.Background()); derr != nil {
				c.log.Error("cleanup after failed create", "err", derr)
			}
		}
	}()

	netCfg := podnet.Config{Name: opts.Name, StateDir: info.Dir, CIDR: info.PodCIDR, ServiceCIDR: info.ServiceCIDR}
	c.net, err = podnet.Create(ctx, netCfg)
	if errors.Is(err, podnet.ErrBridgeExists) {
		// A cluster of this name whose owner died (a killed test binary or CI
		// job) left its bridge: collect abandoned clusters (under the home root
		// and every root registered there) and try once more. A live owner's
		// cluster is never collected, so the error stands for it.
		c.log.Info("the cluster's bridge exists: collecting clusters whose owner died", "err", err)
		removed, gcErr := GC(ctx, "")
		c.log.Info("collected abandoned clusters", "removed", removed, "err", gcErr)
		c.net, err = podnet.Create(ctx, netCfg)
		if errors.Is(err, podnet.ErrBridgeExists) && !liveClusterNamed(opts.Name, info.Dir) {
			// No cluster of this name runs under any known root: the bridge is
			// an orphan whose state folder is gone (removed by hand, or a
			// root never registered). Its pods died with their owner
			// (parent-death signal); remove its links by name.
			c.log.Info("removing an orphaned bridge and veths of a dead cluster of this name")
			if cerr := podnet.Cleanup(ctx, netCfg); cerr != nil {
				c.log.Info("orphan cleanup", "err", cerr)
			}
			c.net, err = podnet.Create(ctx, netCfg)
		}
	}
	if err != nil {
		<-binCh
		return c, fmt.Errorf("local: pod network: %w", err)
	}
	// The bridge now holds the CIDR's gateway address: other clusters see it.
	unlockHost()
	hostLocked = false
	gw := c.net.Gateway()
	c.info.Bridge = c.net.BridgeName()
	if err := writeInfo(c.info); err != nil {
		<-binCh
		return c, err
	}
	br := <-binCh
	if br.err != nil {
		return c, br.err
	}
	c.timings["network+binaries"] = time.Since(t0)
	c.cp, err = controlplane.StartFreshPorts(ctx, controlplane.Config{
		Name: opts.Name, Dir: filepath.Join(info.Dir, "controlplane"), Binaries: br.b, Address: gw,
		ServiceCIDR: info.ServiceCIDR, Log: c.log,
	}, func() ([3]int, error) {
		ports, err := pickPorts(opts, gw)
		c.apiPort = ports[0]
		return ports, err
	})
	if err != nil {
		return c, err
	}
	c.timings["apiserver ready"] = time.Since(t0)
	c.info.Server = c.cp.Server()
	c.info.Kubeconfig = filepath.Join(info.Dir, "kubeconfig")
	if err := copyFile(c.cp.AdminKubeconfig(), c.info.Kubeconfig); err != nil {
		return c, err
	}
	c.client, err = kubernetes.NewForConfig(c.cp.AdminRESTConfig())
	if err != nil {
		return c, fmt.Errorf("local: admin client: %w", err)
	}
	if err := ensureNodeRBAC(ctx, c.client); err != nil {
		return c, err
	}
	if err := storage.EnsureClass(ctx, c.client); err != nil {
		return c, err
	}
	if err := ensureDefaultServiceAccount(ctx, c.client); err != nil {
		return c, err
	}
	// DNS starts while the nodes do; their pods name its fixed ClusterIP.
	c.dnsIP = dnsServiceIP(info.ServiceCIDR)
	dnsStarted := make(chan error, 1)
	go func() { dnsStarted <- c.startDNS(ctx, bgCtx, br.dns, gw) }()
	c.bg.Add(2)
	go func() {
		defer c.bg.Done()
		_ = storage.Run(bgCtx, c.client, storage.Config{Root: filepath.Join(info.Dir, "volumes"), Capacity: opts.StorageCapacity, Log: c.log.With("component", "storage")})
	}()
	go func() {
		defer c.bg.Done()
		runServiceProxy(bgCtx, c.client, c.net, c.log.With("component", "service-proxy"))
	}()

	nodesErr := c.startNodes(ctx, bgCtx, opts, mapping, gw)
	c.timings["nodes ready"] = time.Since(t0)
	if err := errors.Join(nodesErr, <-dnsStarted); err != nil {
		return c, err
	}
	if err := c.dns.WaitReady(ctx); err != nil {
		return c, fmt.Errorf("local: cluster DNS: %w", err)
	}
	c.timings["dns ready"] = time.Since(t0)
	c.info.Phase = PhaseRunning
	if err := writeInfo(c.info); err != nil {
		return c, err
	}
	c.bg.Go(func() {
		select {
		case err := <-c.cp.Failed():
			c.log.Error("cluster degraded: a control-plane component died", "err", err)
		case <-bgCtx.Done():
		}
	})
	c.log.Info("cluster ready", "server", c.info.Server, "kubeconfig", c.info.Kubeconfig, "took", time.Since(t0).Round(time.Millisecond))
	return c, nil
}

func withDefaults(o Options) Options {
	if o.Name == "" {
		o.Name = "gauntlet"
	}
	o.StateRoot = StateRoot(o.StateRoot)
	if o.Nodes <= 0 {
		o.Nodes = 3
	}
	if o.NodeCapacity == nil {
		o.NodeCapacity = corev1.ResourceList{
			corev1.ResourceCPU:              resource.MustParse("4"),
			corev1.ResourceMemory:           resource.MustParse("8Gi"),
			corev1.ResourcePods:             resource.MustParse("110"),
			corev1.ResourceEphemeralStorage: resource.MustParse("50Gi"),
		}
	}
	if o.StorageCapacity.IsZero() {
		o.StorageCapacity = resource.MustParse("100Gi")
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

func loadMapping(opts Options) (*images.Mapping, error) {
	rules, err := mappingRules(opts)
	if err != nil {
		return nil, err
	}
	iopts := images.Options{OperatorBinary: opts.OperatorBinary}
	m, err := images.New(append(rules, images.DefaultRules(iopts)...), iopts)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return m, nil
}

// mappingRules are the user's rules in the order they are tried: the mapping
// file's, then MappingRules (the shipped defaults come after both).
func mappingRules(opts Options) ([]imagemap.Rule, error) {
	rules, err := imagemap.ReadFile(opts.MappingFile)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return append(rules, opts.MappingRules...), nil
}

// reserve picks a pod CIDR under the state-root lock (the caller also holds the
// host-wide lock until the bridge exists), creates the cluster folder and records
// the owner, so a concurrent Create never takes the same name or CIDR.
func reserve(opts Options) (Info, error) {
	unlock, err := lockRoot(opts.StateRoot)
	if err != nil {
		return Info{}, err
	}
	defer unlock()
	// Before anything is made under the root, so that `gauntlet cluster gc`
	// finds it whatever happens next (GC takes the same lock to forget a root).
	if err := registerRoot(opts.StateRoot); err != nil {
		return Info{}, err
	}
	dir := filepath.Join(clustersDir(opts.StateRoot), opts.Name)
	if _, err := os.Stat(dir); err == nil {
		info, _ := readInfo(dir)
		hint := "delete it with `gauntlet cluster down " + opts.Name + "`"
		if !info.Running {
			hint = "its owner is gone: clean it with `gauntlet cluster gc`"
		}
		return Info{}, fmt.Errorf("%w: %s (%s)", ErrExists, opts.Name, hint)
	}
	existing, err := List(opts.StateRoot)
	if err != nil {
		return Info{}, err
	}
	cidr, err := freePodCIDR(existing)
	if err != nil {
		return Info{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Info{}, fmt.Errorf("local: create %s: %w", dir, err)
	}
	if err := hoststate.RecordOwner(dir); err != nil {
		return Info{}, fmt.Errorf("local: %w", err)
	}
	info := Info{Name: opts.Name, Dir: dir, PodCIDR: cidr, ServiceCIDR: netip.MustParsePrefix(serviceCIDR), Phase: PhaseCreating, Created: time.Now().UTC(), Running: true}
	return info, writeInfo(info)
}

// freePodCIDR returns the first 10.201.N.0/24 that no recorded cluster uses and no
// host address overlaps.
func freePodCIDR(existing []Info) (netip.Prefix, error) {
	used := map[netip.Prefix]bool{}
	for _, i := range existing {
		used[i.PodCIDR] = true
	}
	var hostPrefixes []netip.Prefix
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				hostPrefixes = append(hostPrefixes, p.Masked())
			}
		}
	}
	for n := 0; n < 256; n++ {
		p := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 201, byte(n), 0}), 24)
		if used[p] {
			continue
		}
		clash := false
		for _, h := range hostPrefixes {
			if h.Overlaps(p) {
				clash = true
				break
			}
		}
		if !clash {
			return p, nil
		}
	}
	return netip.Prefix{}, errors.New("local: all 256 pod CIDRs in 10.201.0.0/16 are taken: delete clusters (`gauntlet cluster list`, `gauntlet cluster down NAME`, `gauntlet cluster gc`)")
}

// pickPorts returns free ports for the API server (on the bridge address) and etcd.
func pickPorts(opts Options, gw netip.Addr) ([3]int, error) {
	var p [3]int
	var err error
	if opts.APIServerPort != 0 {
		p[0] = opts.APIServerPort
		if err := controlplane.CheckPortFree(gw.String(), p[0]); err != nil {
			return p, fmt.Errorf("local: API server port: %w", err)
		}
	} else if p[0], err = controlplane.FreePort(gw.String()); err != nil {
		return p, err
	}
	for i := 1; i < 3; i++ {
		if p[i], err = controlplane.FreePort("127.0.0.1"); err != nil {
			return p, err
		}
	}
	return p, nil
}

// ensureNodeRBAC lets node agents (group system:nodes) watch what virtual-kubelet's
// informers watch cluster-wide; the Node authorizer alone only grants per-object access.
func ensureNodeRBAC(ctx context.Context, client kubernetes.Interface) error {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "gauntlet:node-agent"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps", "services", "persistentvolumeclaims", "persistentvolumes", "pods"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gauntlet:node-agent"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: "system:nodes"}},
	}
	if _, err := client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create node-agent ClusterRole: %w", err)
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create node-agent ClusterRoleBinding: %w", err)
	}
	return nil
}

// ensureDefaultServiceAccount creates default/default now rather than waiting for
// the controller-manager, so pods can be created as soon as Create returns.
func ensureDefaultServiceAccount(ctx context.Context, client kubernetes.Interface) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: metav1.NamespaceDefault}}
	if _, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("local: create the default ServiceAccount: %w", err)
	}
	return nil
}

// startNodes starts every node agent in parallel and waits until all are Ready.
func (c *Cluster) startNodes(ctx, bgCtx context.Context, opts Options, mapping *images.Mapping, gw netip.Addr) error {
	ca := c.cp.CA()
	type result struct {
		i    int
		node *kubelet.Node
		err  error
	}
	results := make(chan result, opts.Nodes)
	for i := 0; i < opts.Nodes; i++ {
		name := "node-" + strconv.Itoa(i+1)
		zone := "zone-" + string(rune('a'+i%26))
		go func() {
			n, err := c.startNode(ctx, bgCtx, ca, name, zone, opts, mapping, gw)
			results <- result{i, n, err}
		}()
	}
	nodes := make([]*kubelet.Node, opts.Nodes)
	var errs []error
	for range opts.Nodes {
		r := <-results
		nodes[r.i] = r.node
		if r.err != nil {
			errs = append(errs, r.err)
		}
	}
	for _, n := range nodes {
		if n != nil {
			c.nodes = append(c.nodes, n)
			c.info.Nodes = append(c.info.Nodes, n.Name())
		}
	}
	return errors.Join(errs...)
}

func (c *Cluster) startNode(ctx, bgCtx context.Context, ca *pki.CA, name, zone string, opts Options, mapping *images.Mapping, gw netip.Addr) (*kubelet.Node, error) {
	clientPair, err := ca.Issue(pki.Request{CommonName: "system:node:" + name, Organizations: []string{"system:nodes"}, Client: true})
	if err != nil {
		return nil, err
	}
	servePair, err := ca.Issue(pki.Request{CommonName: name, IPs: []net.IP{gw.AsSlice()}, DNSNames: []string{name}, Server: true})
	if err != nil {
		return nil, err
	}
	serveCert, err := servePair.TLSCertificate()
	if err != nil {
		return nil, err
	}
	port, err := controlplane.FreePort(gw.String())
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(c.cp.RESTConfig(clientPair))
	if err != nil {
		return nil, fmt.Errorf("local: node %s client: %w", name, err)
	}
	n, err := kubelet.Start(bgCtx, kubelet.Config{
		NodeName: name,
		Labels: map[string]string{
			"kubernetes.io/hostname":        name,
			"topology.kubernetes.io/zone":   zone,
			"topology.kubernetes.io/region": "local",
		},
		Client:  client,
		Address: gw,
		Port:    port,
		TLS: &tls.Config{
			Certificates: []tls.Certificate{serveCert},
			ClientCAs:    ca.Pool(),
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
		},
		AllowedClientCNs: []string{controlplane.KubeletClientCN},
		Capacity:         opts.NodeCapacity,
		StateDir:         filepath.Join(c.info.Dir, "nodes", name),
		Network:          c.net,
		Images:           mapping,
		DNS:              []netip.Addr{c.dnsIP},
		ClusterDomain:    clusterDomain,
		Log:              c.log.With("node", name),
	})
	if err != nil {
		return nil, fmt.Errorf("local: node %s: %w", name, err)
	}
	return n, nil
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.info.Name }

// Info is the cluster's record.
func (c *Cluster) Info() Info { return c.info }

// Kubeconfig is the path of the cluster-admin kubeconfig.
func (c *Cluster) Kubeconfig() string { return c.info.Kubeconfig }

// RESTConfig is a cluster-admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.cp.AdminRESTConfig()) }

// Client is a cluster-admin clientset.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Timings reports how long each start-up phase took, from the start of Create.
func (c *Cluster) Timings() map[string]time.Duration { return c.timings }

// Delete stops every node (containers first), the control plane and the pod
// network, then removes the state folder, volumes included. It is idempotent.
func (c *Cluster) Delete(ctx context.Context) error {
	c.once.Do(func() {
		c.info.Phase = PhaseDeleting
		_ = writeInfo(c.info)
		var errs []error
		for _, n := range c.nodes {
			if err := n.Stop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("local: stop node %s: %w", n.Name(), err))
			}
		}
		c.cancel()
		if c.dns != nil {
			if err := c.dns.Stop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("local: %w", err))
			}
		}
		if c.cp != nil {
			if err := c.cp.Stop(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		c.bg.Wait()
		if c.net != nil {
			if err := c.net.Close(ctx); err != nil {
				errs = append(errs, fmt.Errorf("local: pod network: %w", err))
			}
		}
		if err := purge(ctx, c.info); err != nil {
			errs = append(errs, err)
		}
		c.delErr = errors.Join(errs...)
	})
	return c.delErr
}
