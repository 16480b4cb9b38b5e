package monitors

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors/internal/valkeyconn"
)

// ValkeyMonitorOptions tune a ValkeyMonitor. Zero values take the documented defaults.
type ValkeyMonitorOptions struct {
	// Port is the port dialled on each pod IP; default ValkeyPort (6379). Tests
	// inject another.
	Port int
	// Timeout bounds the reading of one pod (connect, handshake and the pipelined
	// ROLE, INFO and CONFIG GET); default 1s. Pods are read in parallel, so a
	// sample takes about Timeout at worst plus the API calls.
	Timeout time.Duration
	// APITimeout bounds the API lookups of one sample (pods, Service,
	// EndpointSlices, Secrets) on top of the caller's context; default 5s.
	APITimeout time.Duration
}

// ValkeyMonitor samples the pods of a ValkeyCluster of the bundled operator:
// per pod ROLE, INFO replication, CONFIG GET of every spec.config key and the
// pod's labels, and which pods the client Service's endpoints select. It keeps
// one client per pod address and credentials across samples; Close releases them.
type ValkeyMonitor struct {
	opts ValkeyMonitorOptions

	// mu guards pools: one per namespace, so campaigns' workers sample their own
	// clusters concurrently.
	mu    sync.Mutex
	pools map[string]*nsPool
}

// nsPool is one namespace's connections; mu serializes its samples (the pool is
// pruned to the pods of the latest one).
type nsPool struct {
	mu   sync.Mutex
	pool *valkeyconn.Pool
}

// poolFor returns the namespace's pool, creating it on first use.
func (m *ValkeyMonitor) poolFor(ns string) *nsPool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.pools[ns]
	if p == nil {
		p = &nsPool{pool: valkeyconn.NewPool(valkeyconn.Options{DialTimeout: m.opts.Timeout, IOTimeout: m.opts.Timeout, ClientName: "gauntlet-monitor"})}
		m.pools[ns] = p
	}
	return p
}

// Forget closes the connections of a namespace whose system is gone.
func (m *ValkeyMonitor) Forget(ns string) {
	m.mu.Lock()
	p := m.pools[ns]
	delete(m.pools, ns)
	m.mu.Unlock()
	if p != nil {
		p.mu.Lock()
		p.pool.Close()
		p.mu.Unlock()
	}
}

var _ SystemMonitor = (*ValkeyMonitor)(nil)

// NewValkeyMonitor returns a monitor; call Close when done with it.
func NewValkeyMonitor(opts ValkeyMonitorOptions) *ValkeyMonitor {
	if opts.Port == 0 {
		opts.Port = ValkeyPort
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.APITimeout <= 0 {
		opts.APITimeout = 5 * time.Second
	}
	return &ValkeyMonitor{opts: opts, pools: map[string]*nsPool{}}
}

// Name is "valkey".
func (m *ValkeyMonitor) Name() string { return "valkey" }

// Close closes every cached connection. The monitor must not be used afterwards.
func (m *ValkeyMonitor) Close() {
	m.mu.Lock()
	nss := slices.Collect(maps.Keys(m.pools))
	m.mu.Unlock()
	for _, ns := range nss {
		m.Forget(ns)
	}
}

// Sample reads every pod of the cluster (in parallel, each bounded by Timeout)
// and the client Service. A pod without an IP, or one that cannot be reached or
// refuses the credentials, is a member with Reachable false and Error saying why;
// when the CR's auth or TLS Secret cannot be read every member reports that. The
// error is non-nil only when the API server could not list the pods or read the
// Service.
func (m *ValkeyMonitor) Sample(ctx context.Context, env Env) (*model.SystemSample, error) {
	taken := time.Now()

	spec, ns, err := clusterOf(env)
	if err != nil {
		return nil, fmt.Errorf("valkey monitor: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, m.opts.APITimeout)
	defer cancel()
	pods, err := listValkeyPods(actx, env.Kube, ns, spec.name)
	if err != nil {
		return nil, fmt.Errorf("valkey monitor: %w", err)
	}
	exists, eps, err := clientService(actx, env.Kube, ns, spec.name)
	if err != nil {
		return nil, fmt.Errorf("valkey monitor: %w", err)
	}
	sec, secErr := security(actx, env.Kube, ns, spec)
	np := m.poolFor(ns)
	np.mu.Lock()
	defer np.mu.Unlock()

	sample := &model.SystemSample{Taken: taken, Members: make([]model.Member, len(pods))}
	if exists {
		sample.Service = spec.name
		sample.Selected = selectedPods(eps)
	}
	keep := map[string]bool{}
	var wg sync.WaitGroup
	for i := range pods {
		pod := &pods[i]
		mem := &sample.Members[i]
		mem.Pod = pod.Name
		mem.Labels = copyLabels(pod.Labels)
		if reason := unreachablePod(pod); reason != "" {
			mem.Error, mem.Unreachable = reason, model.UnreachableNoAddress
			continue
		}
		mem.Address = hostPort(pod.Status.PodIP, m.opts.Port)
		if secErr != nil {
			mem.Error, mem.Unreachable = secErr.Error(), securityUnreachable(secErr)
			continue
		}
		keep[mem.Address] = true
		podSec := withServerNames(sec, ns, spec.name, pod.Name)
		wg.Go(func() {
			m.readMember(ctx, np.pool, mem, podSec, spec.configKeys)
		})
	}
	wg.Wait()
	np.pool.Retain(keep)
	return sample, nil
}

// readMember fills mem from the server at mem.Address.
func (m *ValkeyMonitor) readMember(ctx context.Context, pool *valkeyconn.Pool, mem *model.Member, sec valkeyconn.Security, configKeys []string) {
	// A fresh connection (dial and handshake, up to one Timeout each) gets its
	// own time: sharing one Timeout with the commands kept a pod that had just
	// failed failing on a loaded host, though it answered (seed 2 of the
	// untuned campaign).
	cctx, ccancel := context.WithTimeout(ctx, 2*m.opts.Timeout)
	c, err := pool.GetContext(cctx, mem.Address, sec)
	ccancel()
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	if err != nil {
		mem.Error, mem.Unreachable = err.Error(), valkeyconn.Unreachable(err)
		return
	}
	valkeyconn.Probe(ctx, c, configKeys, mem)
	if !mem.Reachable {
		// The connection is in doubt (timeout, reset, refused credentials): start
		// afresh next time rather than queue behind a frozen server.
		pool.Forget(mem.Address)
	}
}

// unreachablePod says why a pod cannot be dialled, or "" when it can be.
func unreachablePod(p *corev1.Pod) string {
	switch {
	case p.Status.PodIP == "":
		return fmt.Sprintf("pod %s has no IP yet (phase %s)", p.Name, p.Status.Phase)
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return fmt.Sprintf("pod %s has terminated (phase %s)", p.Name, p.Status.Phase)
	}
	return ""
}

func copyLabels(l map[string]string) map[string]string {
	if len(l) == 0 {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}
