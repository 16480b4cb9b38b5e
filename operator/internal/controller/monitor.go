package controller

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// Target is one pod the monitor checks.
type Target struct {
	Pod      string
	Endpoint valkey.Endpoint
}

// ProbeConfig is a cluster's spec.failover.
type ProbeConfig struct {
	Interval, Timeout, DownAfter time.Duration
}

// Monitor is the operator's Sentinel eyes: it PINGs every pod of every cluster
// at the cluster's health-check interval, keeps each pod's failover.Health, and
// triggers a reconcile of the cluster when a pod becomes subjectively down or
// comes back. It runs only on the leader.
type Monitor struct {
	client  valkey.Client
	log     logr.Logger
	events  chan event.GenericEvent
	metrics *Metrics

	mu       sync.Mutex
	ctx      context.Context
	clusters map[types.NamespacedName]*probe
}

type probe struct {
	cancel  context.CancelFunc
	cfg     ProbeConfig
	targets map[string]Target
	health  map[string]failover.Health
	down    map[string]bool // last state reported
	running bool
}

// NewMonitor returns a monitor that checks pods through c.
func NewMonitor(c valkey.Client, log logr.Logger, m *Metrics) *Monitor {
	return &Monitor{client: c, log: log, metrics: m, events: make(chan event.GenericEvent, 1024), clusters: map[types.NamespacedName]*probe{}}
}

// Source is the event source to watch: a reconcile of the cluster whose health changed.
func (m *Monitor) Source() source.Source {
	return source.Channel(m.events, &handler.EnqueueRequestForObject{})
}

// NeedLeaderElection: only the leader checks (and acts).
func (m *Monitor) NeedLeaderElection() bool { return true }

// Start runs the monitor until ctx ends.
func (m *Monitor) Start(ctx context.Context) error {
	m.mu.Lock()
	m.ctx = ctx
	for key, p := range m.clusters {
		m.startLocked(key, p)
	}
	m.mu.Unlock()
	<-ctx.Done()
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, p := range m.clusters {
		if p.cancel != nil {
			p.cancel()
		}
		delete(m.clusters, key)
	}
	return nil
}

func (m *Monitor) startLocked(key types.NamespacedName, p *probe) {
	if m.ctx == nil || p.running {
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	p.cancel, p.running = cancel, true
	go m.loop(ctx, key)
}

// Track sets the pods of a cluster to check (replacing the previous set) and
// the timing; checking starts or continues.
func (m *Monitor) Track(key types.NamespacedName, targets []Target, cfg ProbeConfig) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.clusters[key]
	if !ok {
		p = &probe{health: map[string]failover.Health{}, down: map[string]bool{}}
		m.clusters[key] = p
	}
	p.cfg = cfg
	p.targets = map[string]Target{}
	now := time.Now()
	for _, t := range targets {
		p.targets[t.Pod] = t
		if h, ok := p.health[t.Pod]; !ok || h.Addr != t.Endpoint.Addr {
			p.health[t.Pod] = failover.NewHealth(t.Endpoint.Addr, now)
			delete(p.down, t.Pod)
		}
	}
	for pod := range p.health {
		if _, ok := p.targets[pod]; !ok {
			delete(p.health, pod)
			delete(p.down, pod)
		}
	}
	m.startLocked(key, p)
}

// Targets returns the pods of a cluster being checked.
func (m *Monitor) Targets(key types.NamespacedName) map[string]Target {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Target{}
	if p, ok := m.clusters[key]; ok {
		for k, v := range p.targets {
			out[k] = v
		}
	}
	return out
}

// Forget stops checking a cluster (deleted).
func (m *Monitor) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.clusters[key]; ok {
		if p.cancel != nil {
			p.cancel()
		}
		delete(m.clusters, key)
	}
}

// Snapshot returns the health of a cluster's pods, by pod name.
func (m *Monitor) Snapshot(key types.NamespacedName) map[string]failover.Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]failover.Health{}
	if p, ok := m.clusters[key]; ok {
		for k, v := range p.health {
			out[k] = v
		}
	}
	return out
}

func (m *Monitor) loop(ctx context.Context, key types.NamespacedName) {
	for {
		m.mu.Lock()
		p, ok := m.clusters[key]
		if !ok {
			m.mu.Unlock()
			return
		}
		cfg := p.cfg
		targets := make([]Target, 0, len(p.targets))
		for _, t := range p.targets {
			targets = append(targets, t)
		}
		m.mu.Unlock()

		interval := cfg.Interval
		if interval <= 0 {
			interval = v1alpha1.DefaultHealthCheckInterval
		}
		tick := time.Now()
		checks := m.checkAll(ctx, targets, cfg.Timeout)
		if ctx.Err() != nil {
			return
		}
		if m.record(key, checks) {
			select {
			case m.events <- event.GenericEvent{Object: &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}}:
			case <-ctx.Done():
				return
			}
		}
		wait := interval - time.Since(tick)
		if wait < 0 {
			wait = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

type checkResult struct {
	pod, addr string
	check     failover.Check
}

func (m *Monitor) checkAll(ctx context.Context, targets []Target, timeout time.Duration) []checkResult {
	if timeout <= 0 {
		timeout = v1alpha1.DefaultHealthCheckTimeout
	}
	out := make([]checkResult, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			_, err := m.client.Do(cctx, t.Endpoint, valkey.CmdPing()...)
			c := failover.Check{At: time.Now(), Latency: time.Since(start), OK: alive(err)}
			if !c.OK {
				c.Err = err.Error()
			}
			out[i] = checkResult{pod: t.Pod, addr: t.Endpoint.Addr, check: c}
		})
	}
	wg.Wait()
	return out
}

// alive: a reply, even an error reply, proves the server answers; only a failed
// connection or a timeout counts against it.
func alive(err error) bool {
	if err == nil {
		return true
	}
	if _, ok := valkey.IsServerError(err); ok {
		return true
	}
	m := err.Error()
	return strings.Contains(m, "NOAUTH") || strings.Contains(m, "WRONGPASS") || strings.Contains(m, "LOADING")
}

// record stores the checks and reports whether some pod changed between up and
// subjectively down.
func (m *Monitor) record(key types.NamespacedName, checks []checkResult) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.clusters[key]
	if !ok {
		return false
	}
	changed := false
	now := time.Now()
	for _, c := range checks {
		h, ok := p.health[c.pod]
		if !ok || h.Addr != c.addr {
			continue // the target changed meanwhile
		}
		h = h.Record(c.check)
		p.health[c.pod] = h
		if m.metrics != nil {
			m.metrics.observeCheck(key, c.check)
		}
		down := h.SubjectivelyDown(now, p.cfg.DownAfter)
		if down != p.down[c.pod] {
			p.down[c.pod] = down
			changed = true
			if down {
				m.log.Info("pod subjectively down", "cluster", key.String(), "pod", c.pod, "addr", c.addr, "lastError", h.LastError, "failures", h.ConsecutiveFailures)
			} else {
				m.log.Info("pod answers again", "cluster", key.String(), "pod", c.pod)
			}
		}
	}
	return changed
}
