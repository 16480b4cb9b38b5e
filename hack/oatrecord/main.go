// Command oatrecord regenerates the OAT-layer oracles' test fixtures
// (oracles/testdata/steps, samples, histories) by running real valkey-server (or
// redis-server) processes on loopback and playing each scenario: an "operator"
// (this program) moves roles and labels, a workload writes unique keys (SET, then
// WAIT for replicas) and reads them back through a simulated client Service (the
// pods labelled primary), and Gauntlet's own system monitor
// (monitors.ValkeyMonitor, as campaigns run it) samples every member while it
// runs. Faults are SIGSTOP/SIGCONT.
//
// The pods, the client Service, its EndpointSlice and the auth Secret live in a
// fake Kubernetes clientset that the "operator" keeps up to date; server i of a
// scenario listens on 127.0.0.(i+2) at that scenario's port, as a pod's IP. Every
// connection (operator, workload, monitor) goes through valkey-go, the client the
// production monitor and workload use. The workload is this program's own: open
// loop, a fresh connection per request (many clients), which the failover
// scenarios need; the production workload is one sequential client.
//
// Addresses are rewritten to the pod IPs of oracles/testdata/snapshots/s0.json
// (port 6379) and times shifted so that every transition starts at
// 2025-03-01T10:03:00Z.
//
//	go run ./hack/oatrecord            # from the repository root
//	go run ./hack/oatrecord -only clean-failover
//
// It needs valkey-server (or redis-server, or $GAUNTLET_VALKEY_SERVER), started as
// the tests start theirs (internal/testing/valkeytest). The fixtures are committed:
// tests never run it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	vk "github.com/valkey-io/valkey-go"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors"
)

var t0 = time.Date(2025, 3, 1, 10, 3, 0, 0, time.UTC)

const (
	roleLabel = monitors.ValkeyRoleLabel
	svcName   = "cache"
	ns        = "gauntlet-w0"
)

// The pods of testdata/snapshots/s0.json.
var podIPs = []string{"10.244.2.7", "10.244.0.9", "10.244.1.4"}

func main() {
	out := flag.String("out", "oracles/testdata", "fixture folder")
	only := flag.String("only", "", "record only this scenario")
	base := flag.Int("port", 16400, "port of the first scenario (each scenario takes the next)")
	flag.Parse()
	if _, err := valkeytest.Binary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i, sc := range scenarios() {
		if *only != "" && sc.name != *only {
			continue
		}
		if err := record(*out, *base+i, sc); err != nil {
			fmt.Fprintf(os.Stderr, "record %s: %v\n", sc.name, err)
			os.Exit(1)
		}
		fmt.Println("recorded", sc.name)
	}
}

// scenario plays one transition on a running cluster.
type scenario struct {
	name     string
	required int
	config   map[string]string // the desired spec.config (set on every server first)
	kind     model.StepKind
	changed  []string
	workload bool
	setup    func(c *cluster) error // before the step starts
	play     func(c *cluster) error // the transition; returns when the "operator" is done
}

func record(out string, port int, sc scenario) error {
	dir, err := os.MkdirTemp("", "record-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	c := &cluster{labels: map[string]string{}, required: sc.required, desired: sc.config, kube: fake.NewClientset(),
		mon: monitors.NewValkeyMonitor(monitors.ValkeyMonitorOptions{Port: port, Timeout: 80 * time.Millisecond})}
	defer c.stop()
	for i := range podIPs {
		if err := c.start(dir, i, port); err != nil {
			return err
		}
	}
	if err := c.createObjects(); err != nil {
		return err
	}
	// The converged seed: cache-0 primary, the others its replicas.
	for i := 1; i < len(c.srv); i++ {
		if err := c.replicaOf(i, 0); err != nil {
			return err
		}
	}
	c.setLabels("primary", "replica", "replica")
	for k, v := range sc.config {
		for _, s := range c.srv {
			if _, err := s.do("CONFIG", "SET", k, v); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %s: config set %s %s: %v (kept in the desired state)\n", sc.name, s.pod, k, v, err)
			}
		}
	}
	if err := c.waitLinked(); err != nil {
		return err
	}
	// Replicas stream writes only once they acknowledged their first sync: wait
	// for that, so the seed is converged.
	if r, err := session(c.srv[0].addr(), 5*time.Second, "", [][]string{{"SET", "seed", "1"}, {"WAIT", "2", "3000"}}); err != nil || r[1] != int64(2) {
		return fmt.Errorf("the replicas did not acknowledge the seed write: %v %v", r, err)
	}
	if sc.setup != nil {
		if err := sc.setup(c); err != nil {
			return err
		}
	}
	start := time.Now()
	c.startMonitor()
	if sc.workload {
		c.startWorkload()
	}
	if err := sc.play(c); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	converged := time.Now()
	c.stopWorkload()
	c.stopMonitor()
	final, err := c.sample()
	if err != nil {
		return err
	}
	if c.monErr != nil {
		return c.monErr
	}
	var verify []model.Op
	if sc.workload {
		verify = c.verify()
	}
	shift := t0.Sub(start)
	st := model.Step{
		Worker: 0, Index: 1, Kind: sc.kind, Changed: sc.changed, Started: start.Add(shift), Converged: converged.Add(shift),
		Desired: desired(sc.config),
	}
	for _, f := range c.faults {
		f.Injected = f.Injected.Add(shift)
		if !f.Removed.IsZero() {
			f.Removed = f.Removed.Add(shift)
		}
		st.Faults = append(st.Faults, f)
	}
	samples := append(c.samples, final)
	for i := range samples {
		samples[i] = c.mapSample(samples[i], shift)
	}
	if err := write(filepath.Join(out, "steps", sc.name+".json"), st); err != nil {
		return err
	}
	if err := write(filepath.Join(out, "samples", sc.name+".json"), samples); err != nil {
		return err
	}
	if sc.workload {
		h := model.History{Workload: "kv", Required: sc.required}
		sort.SliceStable(c.ops, func(i, j int) bool { return c.ops[i].Start.Before(c.ops[j].Start) })
		for _, op := range append(c.ops, verify...) {
			h.Ops = append(h.Ops, c.mapOp(op, shift))
		}
		if err := write(filepath.Join(out, "histories", sc.name+".json"), h); err != nil {
			return err
		}
	}
	return nil
}

func desired(cfg map[string]string) model.Object {
	m := map[string]any{}
	for k, v := range cfg {
		m[k] = v
	}
	return model.Object{
		"apiVersion": "valkey.gauntlet.dev/v1alpha1", "kind": "ValkeyCluster",
		"metadata": map[string]any{"name": "cache", "namespace": ns},
		"spec":     map[string]any{"replicas": 3.0, "image": "valkey/valkey:8.1", "config": m},
	}
}

func write(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Servers.

type server struct {
	pod  string
	ip   string
	port int
	proc *valkeytest.Server
	auth string
}

func (s *server) addr() string { return net.JoinHostPort(s.ip, strconv.Itoa(s.port)) }

func (s *server) do(args ...string) (any, error) {
	r, err := session(s.addr(), 500*time.Millisecond, s.auth, [][]string{args})
	if err != nil {
		return nil, err
	}
	return r[0], nil
}

type cluster struct {
	srv      []*server
	required int
	desired  map[string]string
	kube     *fake.Clientset
	mon      *monitors.ValkeyMonitor
	monErr   error  // the first failed sample
	password string // the password the monitor is told (spec.auth), "" for none

	mu      sync.Mutex
	labels  map[string]string // pod → role label
	faults  []model.Fault
	samples []model.SystemSample
	ops     []model.Op
	acked   []model.Op // writes to read back
	stopMon chan struct{}
	stopWL  chan struct{}
	monWG   sync.WaitGroup
	wlWG    sync.WaitGroup
	dirs    []string // data folders of restarted servers
}

func (c *cluster) start(dir string, i, port int) error {
	s := &server{pod: fmt.Sprintf("cache-%d", i), ip: fmt.Sprintf("127.0.0.%d", i+2), port: port}
	p, err := launch(s, filepath.Join(dir, strconv.Itoa(i)))
	if err != nil {
		return err
	}
	s.proc = p
	c.srv = append(c.srv, s)
	return nil
}

// launch starts the server of s (internal/testing/valkeytest: no persistence) with its
// files below dir and the extra arguments, listening on its pod IP; it
// announces that IP to its primary (a replica's connections come from
// 127.0.0.1, where a pod's come from its IP), so that FAILOVER TO finds the
// replica by its address.
func launch(s *server, dir string, extra ...string) (*valkeytest.Server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := append([]string{"--replica-announce-ip", s.ip, "--repl-diskless-sync", "yes"}, extra...)
	return valkeytest.Start(ctx, valkeytest.Options{Host: s.ip, Port: s.port, Dir: dir, Args: args})
}

func (c *cluster) stop() {
	c.mon.Close()
	for _, s := range c.srv {
		s.proc.Stop()
	}
	for _, d := range c.dirs {
		_ = os.RemoveAll(d)
	}
}

func (c *cluster) waitLinked() error {
	for range 200 {
		ok := true
		for _, s := range c.srv[1:] {
			r, err := s.do("ROLE")
			l, _ := r.([]any)
			if err != nil || len(l) < 4 || l[3] != "connected" {
				ok = false
			}
		}
		if ok {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("replicas did not link")
}

func (c *cluster) setLabels(roles ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, r := range roles {
		if r != "" {
			c.labels[c.srv[i].pod] = r
		}
	}
	if err := c.syncObjects(); err != nil {
		// The fake clientset fails only on a bug of this program.
		panic(err)
	}
}

func (c *cluster) label(i int, role string) { c.setLabels(roleAt(i, role)...) }

func roleAt(i int, role string) []string {
	out := make([]string, i+1)
	out[i] = role
	return out
}

func (c *cluster) freeze(i int, kind string) {
	_ = c.srv[i].proc.Pause()
	c.mu.Lock()
	c.faults = append(c.faults, model.Fault{Kind: kind, Targets: []string{c.srv[i].pod}, Injected: time.Now()})
	c.mu.Unlock()
}

func (c *cluster) thaw(i int) {
	_ = c.srv[i].proc.Resume()
	c.mu.Lock()
	for j := range c.faults {
		if c.faults[j].Targets[0] == c.srv[i].pod && c.faults[j].Removed.IsZero() {
			c.faults[j].Removed = time.Now()
		}
	}
	c.mu.Unlock()
}

func (c *cluster) replicaOf(i, of int) error {
	_, err := c.srv[i].do("REPLICAOF", c.srv[of].ip, strconv.Itoa(c.srv[of].port))
	return err
}

func (c *cluster) promote(i int) error {
	_, err := c.srv[i].do("REPLICAOF", "NO", "ONE")
	return err
}

// fence points a server at a closed port: a replica of nothing.
func (c *cluster) fence(i int) error {
	_, err := c.srv[i].do("REPLICAOF", "127.0.0.1", "1")
	return err
}

// offset is a replica's replication offset (-1 when unknown).
func (c *cluster) offset(i int) int64 {
	r, err := c.srv[i].do("ROLE")
	l, _ := r.([]any)
	if err != nil || len(l) < 5 {
		return -1
	}
	n, _ := l[4].(int64)
	return n
}

// Monitor.

func (c *cluster) startMonitor() {
	c.stopMon = make(chan struct{})
	c.monWG.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			s, err := c.sample()
			c.mu.Lock()
			if err != nil && c.monErr == nil {
				c.monErr = err
			}
			if err == nil {
				c.samples = append(c.samples, s)
			}
			c.mu.Unlock()
			select {
			case <-c.stopMon:
				return
			case <-tick.C:
			}
		}
	})
}

func (c *cluster) stopMonitor() { close(c.stopMon); c.monWG.Wait() }

// sample takes a reading with the production monitor.
func (c *cluster) sample() (model.SystemSample, error) {
	c.mu.Lock()
	cr := c.monitorCR()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.mon.Sample(ctx, monitors.Env{Kube: c.kube, CR: cr})
	if err != nil {
		return model.SystemSample{}, fmt.Errorf("monitor: %w", err)
	}
	return *s, nil
}

// Workload.

// startWorkload issues a request every 15 ms whether or not the previous ones
// were answered (open loop: an outage fails every request it covers, as with
// many clients), alternating writes of new keys and reads of recent ones.
func (c *cluster) startWorkload() {
	c.stopWL = make(chan struct{})
	c.wlWG.Go(func() {
		rng := rand.New(rand.NewPCG(1, 2))
		tick := time.NewTicker(15 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			pick := rng.IntN(1 << 30)
			c.wlWG.Add(1)
			if n%2 == 0 {
				key, val := fmt.Sprintf("k%05d", n/2), fmt.Sprintf("v%05d-%04x", n/2, rng.IntN(1<<16))
				go func() { defer c.wlWG.Done(); c.write(key, val, pick) }()
			} else {
				recent := rng.IntN(20)
				go func() { defer c.wlWG.Done(); c.read(recent, pick) }()
			}
			select {
			case <-c.stopWL:
				return
			case <-tick.C:
			}
		}
	})
}

func (c *cluster) stopWorkload() {
	if c.stopWL != nil {
		close(c.stopWL)
		c.wlWG.Wait()
	}
}

// endpoint picks one of the pods the client Service selects.
func (c *cluster) endpoint(pick int) *server {
	c.mu.Lock()
	defer c.mu.Unlock()
	var sel []*server
	for _, s := range c.srv {
		if c.labels[s.pod] == "primary" {
			sel = append(sel, s)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	return sel[pick%len(sel)]
}

func (c *cluster) write(key, val string, pick int) {
	op := model.Op{Kind: model.OpWrite, Key: key, Value: val, Start: time.Now()}
	s := c.endpoint(pick)
	if s == nil {
		op.Err = "dial tcp cache:6379: connect: connection refused (no endpoints)"
	} else {
		op.Target = s.addr()
		r, err := session(s.addr(), 250*time.Millisecond, s.auth, [][]string{{"SET", key, val}, {"WAIT", strconv.Itoa(c.required), "100"}})
		switch {
		case err != nil && len(r) == 0:
			op.Err = err.Error()
		case err != nil: // SET answered, WAIT did not
			op.OK, op.Acks, op.Err = true, -1, err.Error()
		default:
			op.OK = true
			n, _ := r[1].(int64)
			op.Acks = int(n)
		}
	}
	op.End = time.Now()
	c.mu.Lock()
	c.ops = append(c.ops, op)
	if op.OK {
		c.acked = append(c.acked, op)
	}
	c.mu.Unlock()
}

// read reads one of the 20 latest successful writes (the ones a failover puts
// at risk).
func (c *cluster) read(recent, pick int) {
	c.mu.Lock()
	if len(c.acked) == 0 {
		c.mu.Unlock()
		return
	}
	key := c.acked[len(c.acked)-1-recent%min(len(c.acked), 20)].Key
	c.mu.Unlock()
	op := c.get(model.OpRead, key, pick)
	c.mu.Lock()
	c.ops = append(c.ops, op)
	c.mu.Unlock()
}

func (c *cluster) get(kind model.OpKind, key string, pick int) model.Op {
	op := model.Op{Kind: kind, Key: key, Start: time.Now()}
	s := c.endpoint(pick)
	if s == nil {
		op.Err = "dial tcp cache:6379: connect: connection refused (no endpoints)"
	} else {
		op.Target = s.addr()
		r, err := session(s.addr(), 250*time.Millisecond, s.auth, [][]string{{"GET", key}})
		if err != nil {
			op.Err = err.Error()
		} else {
			op.OK = true
			if v, ok := r[0].(string); ok {
				op.Found, op.Got = true, v
			}
		}
	}
	op.End = time.Now()
	return op
}

// verify reads back every successful write, with its value and acknowledgements.
func (c *cluster) verify() []model.Op {
	var out []model.Op
	for _, w := range c.acked {
		op := c.get(model.OpVerify, w.Key, 0)
		op.Value, op.Acks = w.Value, w.Acks
		out = append(out, op)
	}
	return out
}

// Address and time rewriting.

func (c *cluster) mapAddr(s string) string {
	for i, srv := range c.srv {
		s = strings.ReplaceAll(s, srv.addr(), podIPs[i]+":6379")
	}
	// The local side of a connection is the workload's (or monitor's) pod.
	return localRE.ReplaceAllString(s, "tcp "+clientIP+":$1->")
}

var localRE = regexp.MustCompile(`tcp 127\.0\.0\.\d+:(\d+)->`)

// clientIP is the workload's and monitor's pod IP.
const clientIP = "10.244.0.12"

func (c *cluster) mapSample(s model.SystemSample, shift time.Duration) model.SystemSample {
	s.Taken = s.Taken.Add(shift).Round(time.Millisecond)
	for i := range s.Members {
		m := &s.Members[i]
		m.Address = c.mapAddr(m.Address)
		m.Follows = c.mapAddr(m.Follows)
		m.Error = c.mapAddr(m.Error)
	}
	return s
}

func (c *cluster) mapOp(op model.Op, shift time.Duration) model.Op {
	op.Start = op.Start.Add(shift).Round(time.Microsecond)
	op.End = op.End.Add(shift).Round(time.Microsecond)
	op.Target = c.mapAddr(op.Target)
	op.Err = c.mapAddr(op.Err)
	return op
}

// Connections.

// session sends cmds in order on one fresh valkey-go connection (authenticated
// when auth is set) and returns the replies read before the first error, as Go
// values (strings, int64s, []any; nil for a nil reply); a server error reply is an
// error too.
func session(addr string, timeout time.Duration, auth string, cmds [][]string) ([]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout+150*time.Millisecond)
	defer cancel()
	cl, err := vk.NewClient(vk.ClientOption{
		InitAddress:       []string{addr},
		ForceSingleClient: true,
		DisableCache:      true,
		DisableRetry:      true,
		Password:          auth,
		ClientSetInfo:     vk.DisableClientSetInfo,
		ConnWriteTimeout:  timeout,
		Dialer:            net.Dialer{Timeout: timeout},
	})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []any
	for _, args := range cmds {
		v, err := cl.Do(ctx, cl.B().Arbitrary(args[0]).Args(args[1:]...).Build()).ToAny()
		if vk.IsValkeyNil(err) {
			v, err = nil, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
