package machine

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// realServers runs one real valkey-server (or redis-server) per pod, on its own
// loopback address and port 6379, started from the ConfigMap's valkey.conf as
// the pod would be.
type realServers struct {
	dir  string
	pool *valkey.Pool
	mu   sync.Mutex
	srv  map[string]*valkeytest.Server // by IP
}

func newRealServers(t *testing.T) *realServers {
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	// Port 6379 must be free on 127.77.0.x (each pod has its own address).
	l, err := net.Listen("tcp", "127.77.0.250:6379")
	if err != nil {
		testenv.Unavailable(t, "cannot bind 127.77.0.250:6379 (%v): the loopback-address test needs it free", err)
	}
	l.Close()
	r := &realServers{dir: t.TempDir(), pool: valkey.NewPool(), srv: map[string]*valkeytest.Server{}}
	t.Cleanup(func() {
		r.pool.Close()
		r.mu.Lock()
		ips := slices.Collect(maps.Keys(r.srv))
		r.mu.Unlock()
		for _, ip := range ips {
			r.kill(ip)
		}
	})
	return r
}

func (r *realServers) start(ip, pod, confText string) {
	dir := filepath.Join(r.dir, pod+"-"+ip)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		panic(err)
	}
	file := filepath.Join(dir, "valkey.conf")
	// /data is the pod's volume; here it is a folder of the test's (the server
	// loads its files from its own folder below it, valkeytest's --dir).
	confText = strings.ReplaceAll(confText, "\ndir "+conf.DataDir+"\n", "\ndir "+dir+"\n")
	if err := os.WriteFile(file, []byte(confText), 0o644); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := valkeytest.Start(ctx, valkeytest.Options{Host: ip, Port: 6379, Dir: dir, Config: file, Args: []string{"--replica-announce-ip", ip}})
	if err != nil {
		panic(fmt.Sprintf("server %s did not start: %v", ip, err))
	}
	r.mu.Lock()
	r.srv[ip] = s
	r.mu.Unlock()
}

func (r *realServers) kill(ip string) {
	r.mu.Lock()
	s := r.srv[ip]
	delete(r.srv, ip)
	r.mu.Unlock()
	if s != nil {
		s.Stop()
	}
}

func (r *realServers) alive(ip string) bool {
	r.mu.Lock()
	s, ok := r.srv[ip]
	r.mu.Unlock()
	return ok && !s.Exited()
}

func (r *realServers) do(cmd *ValkeyCommand) Response {
	ctx, cancel := context.WithTimeout(context.Background(), max(cmd.Timeout, time.Second))
	defer cancel()
	reply, err := r.pool.Do(ctx, cmd.Endpoint, cmd.Args...)
	return Response{Reply: reply, Err: err}
}

func (r *realServers) info(ip string) (valkey.Info, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	reply, err := r.pool.Do(ctx, valkey.Endpoint{Addr: ip + ":6379"}, "INFO")
	if err != nil {
		return valkey.Info{}, err
	}
	return valkey.ParseInfo(reply.String())
}

func (r *realServers) ready(ip string) bool {
	in, err := r.info(ip)
	return err == nil && (in.Role == valkey.RoleMaster || in.MasterLinkUp)
}

func (r *realServers) cmd(ip string, args ...string) (valkey.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return r.pool.Do(ctx, valkey.Endpoint{Addr: ip + ":6379"}, args...)
}

// realConverge runs passes (with real time passing) until the topology is
// right on the real servers and a pass changes nothing.
func realConverge(t *testing.T, w *fakeWorld, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		w.now = time.Now()
		w.settle(ns)
		n, _, last := w.pass(ns, name, 0)
		w.settle(ns)
		if last.Err != nil {
			t.Logf("pass error: %v", last.Err)
		}
		c := w.cr(ns, name)
		if n == 0 && c.Status.Phase == v1alpha1.PhaseReady && len(realTopologyErrors(w)) == 0 {
			return
		}
		time.Sleep(150 * time.Millisecond)
	}
	t.Fatalf("no convergence in %s: phase %s, topology %v, conditions %+v", timeout, w.cr(ns, name).Status.Phase, realTopologyErrors(w), w.cr(ns, name).Status.Conditions)
}

func realTopologyErrors(w *fakeWorld) []string {
	prim, errs := labelledPrimary(w.pods(ns))
	if prim == nil {
		return errs
	}
	if in, err := w.real.info(prim.Status.PodIP); err != nil || in.Role != valkey.RoleMaster {
		errs = append(errs, fmt.Sprintf("%s labelled primary: %v %v", prim.Name, in.Role, err))
	}
	for _, p := range w.pods(ns) {
		if p.Name == prim.Name {
			continue
		}
		in, err := w.real.info(p.Status.PodIP)
		if err != nil || !in.ReplicatingFrom(prim.Status.PodIP, conf.Port) || !in.MasterLinkUp {
			errs = append(errs, p.Name+" is not a linked replica of the primary")
		}
	}
	return errs
}

func realPrimaryIP(w *fakeWorld) string {
	for _, p := range w.pods(ns) {
		if p.Labels[v1alpha1.LabelRole] == v1alpha1.RolePrimary {
			return p.Status.PodIP
		}
	}
	return ""
}

// TestRealServers drives the state machine against real Valkey/Redis servers
// (one per pod, started from the rendered valkey.conf) with a simulated API
// server: bootstrap, acknowledged writes, a live and a restart-only
// configuration change, and a failover after SIGKILL of the primary.
func TestRealServers(t *testing.T) {
	testenv.SkipShort(t)
	w := worldWith(newCluster(3))
	w.real = newRealServers(t)
	realConverge(t, w, 30*time.Second)
	if p := w.cr(ns, name).Status.Primary; p != "cache-0" {
		t.Fatalf("bootstrap primary %s", p)
	}

	// Writes acknowledged by both replicas.
	prim := realPrimaryIP(w)
	for i := 0; i < 100; i++ {
		if _, err := w.real.cmd(prim, "SET", fmt.Sprintf("key:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := w.real.cmd(prim, "WAIT", "2", "2000"); err != nil || n.Int != 2 {
		t.Fatalf("WAIT: %v %v", n, err)
	}

	// Live configuration.
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru", "no-such-key": "1"}
	})
	realConverge(t, w, 20*time.Second)
	for _, p := range w.pods(ns) {
		r, err := w.real.cmd(p.Status.PodIP, "CONFIG", "GET", "maxmemory")
		m, _ := r.StringMap()
		if err != nil || m["maxmemory"] != "104857600" {
			t.Fatalf("%s maxmemory %v %v", p.Name, m, err)
		}
	}
	cond := meta.FindStatusCondition(w.cr(ns, name).Status.Conditions, v1alpha1.ConditionConfigApplied)
	if cond == nil || cond.Reason != "ConfigRejected" || !strings.Contains(cond.Message, "no-such-key") {
		t.Fatalf("ConfigApplied: %+v", cond)
	}

	// Failover: SIGKILL the primary; the container restarts empty.
	old := w.cr(ns, name).Status.Primary
	w.real.kill(prim)
	w.now = time.Now()
	w.pass(ns, name, 0) // sees it down (health), fails over
	var oldPod *corev1.Pod
	for _, p := range w.pods(ns) {
		if p.Name == old {
			oldPod = p
		}
	}
	cm := w.objs["ConfigMap/"+ns+"/"+name+"-config"].(*corev1.ConfigMap)
	w.real.start(oldPod.Status.PodIP, oldPod.Name+"-restart", cm.Data[conf.ConfigMapKey])
	realConverge(t, w, 30*time.Second)
	c := w.cr(ns, name)
	if c.Status.Primary == old || c.Status.LastFailoverTime == nil {
		t.Fatalf("no failover: %+v", c.Status)
	}
	for _, p := range w.pods(ns) {
		in, err := w.real.info(p.Status.PodIP)
		if err != nil || in.Keys != 100 {
			t.Fatalf("%s has %d keys after the failover (%v): acknowledged writes lost", p.Name, in.Keys, err)
		}
	}

	// Restart-only configuration: rolled, replicas first, switchover, data kept.
	w.setSpec(ns, name, func(s *v1alpha1.ValkeyClusterSpec) {
		s.Config = map[string]string{"maxmemory": "100mb", "maxmemory-policy": "allkeys-lru", "databases": "32"}
	})
	before := w.cr(ns, name).Status.Primary
	realConverge(t, w, 60*time.Second)
	for _, p := range w.pods(ns) {
		r, err := w.real.cmd(p.Status.PodIP, "CONFIG", "GET", "databases")
		m, _ := r.StringMap()
		if err != nil || m["databases"] != "32" {
			t.Fatalf("%s databases %v %v", p.Name, m, err)
		}
		in, _ := w.real.info(p.Status.PodIP)
		if in.Keys != 100 {
			t.Fatalf("%s has %d keys after the roll", p.Name, in.Keys)
		}
	}
	if after := w.cr(ns, name).Status.Primary; after == before {
		t.Fatalf("the primary %s was not switched over during the roll", before)
	}
	if !hasEvent(w, "SwitchoverStarted") || !hasEvent(w, "RollingRestart") {
		t.Fatal("roll events missing")
	}
	if len(w.violations) > 0 {
		t.Fatalf("invariant violations: %v", w.violations)
	}
}

// TestRealServersGhostPrimary deletes the primary's pod object with grace 0
// while its real server keeps running and a client keeps writing to its address
// (SET, then WAIT 1); the StatefulSet replaces the pod at once, at a new
// address. Every write a replica acknowledged must survive the failover, and
// the old process must end up refusing writes.
func TestRealServersGhostPrimary(t *testing.T) {
	testenv.SkipShort(t)
	w := worldWith(newCluster(3))
	w.real = newRealServers(t)
	realConverge(t, w, 30*time.Second)
	ghost := realPrimaryIP(w)
	for _, p := range w.pods(ns) {
		if p.Status.PodIP == ghost {
			delete(w.objs, keyOf(p))
		}
	}

	stop := make(chan struct{})
	var acked []string
	var refused int
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprintf("ghost:%d", i)
			if _, err := w.real.cmd(ghost, "SET", k, "v"); err != nil {
				refused++
				time.Sleep(5 * time.Millisecond)
				continue
			}
			if n, err := w.real.cmd(ghost, "WAIT", "1", "100"); err == nil && n.Int >= 1 {
				acked = append(acked, k)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond) // writes acknowledged before the operator looks
	realConverge(t, w, 30*time.Second)
	time.Sleep(200 * time.Millisecond) // the client keeps trying the old address
	close(stop)
	<-clientDone

	if len(acked) == 0 {
		t.Fatal("no write to the old process was acknowledged: the test proves nothing")
	}
	if refused == 0 {
		t.Error("the old process never refused a write: it was not fenced")
	}
	if in, err := w.real.info(ghost); err != nil || in.Role == valkey.RoleMaster {
		t.Errorf("old process at %s: role %s (%v), want fenced", ghost, in.Role, err)
	}
	if !hasEvent(w, "Fenced") {
		t.Error("no Fenced event")
	}
	prim := realPrimaryIP(w)
	if prim == ghost || prim == "" {
		t.Fatalf("primary %q after the failover", prim)
	}
	if _, err := w.real.cmd(prim, "WAIT", "2", "2000"); err != nil {
		t.Fatal(err)
	}
	for _, p := range w.pods(ns) {
		lost := 0
		for _, k := range acked {
			if n, err := w.real.cmd(p.Status.PodIP, "EXISTS", k); err != nil || n.Int != 1 {
				lost++
			}
		}
		if lost > 0 {
			t.Errorf("%s misses %d of the %d writes the old process had acknowledged", p.Name, lost, len(acked))
		}
	}
	t.Logf("%d writes acknowledged by the old process, %d refused after the fence", len(acked), refused)
	w.real.kill(ghost)
}
