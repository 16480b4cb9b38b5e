package monitors

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gauntlet-dev/gauntlet/model"
)

// fastOpts are the workload options of the tests: defaults, faster writes.
func fastOpts(port int) ValkeyWorkloadOptions {
	return ValkeyWorkloadOptions{Port: port, Interval: 20 * time.Millisecond, ReadEvery: 5, ResolveEvery: 200 * time.Millisecond}
}

// collect takes ops from run until cond holds on everything taken so far.
func collect(t *testing.T, run WorkloadRun, what string, cond func([]model.Op) bool) []model.Op {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var ops []model.Op
	for {
		ops = append(ops, run.Take()...)
		if cond(ops) {
			return ops
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 15s; %d ops taken, last %v", what, len(ops), lastOps(ops, 3))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lastOps(ops []model.Op, n int) []model.Op {
	if len(ops) > n {
		return ops[len(ops)-n:]
	}
	return ops
}

func count(ops []model.Op, f func(model.Op) bool) int {
	n := 0
	for _, o := range ops {
		if f(o) {
			n++
		}
	}
	return n
}

func writesOK(n int) func([]model.Op) bool {
	return func(ops []model.Op) bool {
		return count(ops, func(o model.Op) bool { return o.Kind == model.OpWrite && o.OK }) >= n
	}
}

func stopRun(t *testing.T, run WorkloadRun) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := run.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// clusterObjs are the Kubernetes objects of a cluster whose client Service
// selects the pod at primaryIP.
func clusterObjs(extra ...runtime.Object) []runtime.Object {
	return append([]runtime.Object{
		podObject("vk", "vk-0", primaryIP, "primary"),
		podObject("vk", "vk-1", replicaIP, "replica"),
		serviceObject("vk"),
		sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, boolp(true)}),
	}, extra...)
}

// waitLinked waits until the replica reports its link up and the primary counts
// it as online (a primary only counts a replica in WAIT once its first
// REPLCONF ACK after the sync arrived, up to a second after the link is up).
func waitLinked(t *testing.T, env Env, p *pair) {
	t.Helper()
	m := NewValkeyMonitor(ValkeyMonitorOptions{Port: p.port})
	defer m.Close()
	waitSample(t, m, env, "replica linked", func(s *model.SystemSample) bool { return member(s, "vk-1").LinkUp })
	c := client(t, p.primary.Addr, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		res := c.DoMulti(context.Background(), c.B().Set().Key("probe").Value("1").Build(), c.B().Wait().Numreplicas(1).Timeout(100).Build())
		if n, err := res[1].AsInt64(); err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the primary did not count its replica as online within 10s")
		}
	}
}

func TestValkeyWorkloadReplicated(t *testing.T) {
	p := startPair(t, true, nil, nil)
	env := Env{Kube: fakeKube(clusterObjs()...), Namespace: testNS, CR: crObject("vk", 2, nil)}
	waitLinked(t, env, p)

	w := NewValkeyWorkload(fastOpts(p.port))
	if w.Name() == "" {
		t.Error("empty name")
	}
	run, err := w.Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer stopRun(t, run)
	if got := run.Required(); got != 1 {
		t.Errorf("Required() = %d with 2 replicas, want 1", got)
	}
	ops := collect(t, run, "20 writes and 2 reads", func(ops []model.Op) bool {
		return writesOK(20)(ops) && count(ops, func(o model.Op) bool { return o.Kind == model.OpRead }) >= 2
	})
	stopRun(t, run)
	ops = append(ops, run.Take()...)

	primaryAddr := net.JoinHostPort(primaryIP, strconv.Itoa(p.port))
	keys := map[string]bool{}
	var prevEnd time.Time
	for i, o := range ops {
		if !o.OK || o.Err != "" {
			t.Errorf("op %d %+v failed, want every request to succeed", i, o)
		}
		if o.Target != primaryAddr {
			t.Errorf("op %d went to %q, want the Service's endpoint %s", i, o.Target, primaryAddr)
		}
		if o.Start.IsZero() || o.End.Before(o.Start) || o.End.Before(prevEnd) {
			t.Errorf("op %d: start %v end %v (previous end %v), want ordered timestamps in completion order", i, o.Start, o.End, prevEnd)
		}
		prevEnd = o.End
		switch o.Kind {
		case model.OpWrite:
			if o.Acks != 1 {
				t.Errorf("write %s acknowledged by %d replicas, want 1 (a replica is attached)", o.Key, o.Acks)
			}
			if keys[o.Key] {
				t.Errorf("key %s written twice: keys must be unique", o.Key)
			}
			keys[o.Key] = true
			if !strings.HasPrefix(o.Key, "gauntlet:") {
				t.Errorf("key %s, want the gauntlet:<run>:<seq> form", o.Key)
			}
		case model.OpRead:
			if !o.Found || o.Got != o.Value {
				t.Errorf("read %s: found %v got %q, want found %q", o.Key, o.Found, o.Got, o.Value)
			}
		}
	}
	if more := run.Take(); len(more) != 0 {
		t.Errorf("Take after a Take returned %d ops, want the buffer emptied", len(more))
	}

	written := count(ops, func(o model.Op) bool { return o.Kind == model.OpWrite && o.OK && o.Acks >= 1 })
	vctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	verified, err := run.Verify(vctx)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(verified) != written {
		t.Fatalf("verify returned %d ops, want one per acknowledged write (%d)", len(verified), written)
	}
	for _, o := range verified {
		if o.Kind != model.OpVerify || !o.OK || !o.Found || o.Got != o.Value || o.Target != primaryAddr {
			t.Fatalf("verify op %+v, want found with the written value, read on the primary", o)
		}
	}

	// Lose the data: every acknowledged write must now be reported missing.
	c := client(t, p.primary.Addr, "")
	if err := c.Do(context.Background(), c.B().Flushall().Build()).Error(); err != nil {
		t.Fatal(err)
	}
	verified, err = run.Verify(vctx)
	if err != nil {
		t.Fatalf("verify after FLUSHALL: %v", err)
	}
	if len(verified) != written {
		t.Fatalf("verify returned %d ops, want %d", len(verified), written)
	}
	for _, o := range verified {
		if !o.OK || o.Found || o.Err != "" {
			t.Fatalf("verify op %+v after FLUSHALL, want OK and not found", o)
		}
		if o.Acks < 1 {
			t.Fatalf("verify op %+v does not carry its write's acknowledgement count", o)
		}
	}
	// A loss is reported once: the lost keys are not read back again.
	again, err := run.Verify(vctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("a second verify read back %d keys already reported lost", len(again))
	}
}

func TestValkeyWorkloadWithoutReplica(t *testing.T) {
	p := startPair(t, false, nil, nil)
	env := Env{Kube: fakeKube(clusterObjs()...), Namespace: testNS, CR: crObject("vk", 2, nil)}
	run, err := NewValkeyWorkload(fastOpts(p.port)).Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer stopRun(t, run)

	ops := collect(t, run, "3 writes", writesOK(3))
	for _, o := range ops {
		if o.Kind == model.OpWrite && o.Acks != 0 {
			t.Errorf("write %s: Acks %d, want 0 (no replica attached)", o.Key, o.Acks)
		}
		if o.Kind == model.OpWrite && o.End.Sub(o.Start) < 150*time.Millisecond {
			t.Errorf("write %s returned after %v, want WAIT 1 to wait its 200ms timeout", o.Key, o.End.Sub(o.Start))
		}
	}
	verified, err := run.Verify(context.Background())
	if err != nil || len(verified) != 0 {
		t.Fatalf("verify: %d ops, %v; want none (no write reached the promised level)", len(verified), err)
	}

	// Down to one pod: no promise, WAIT 0 returns at once.
	run.Update(crObject("vk", 1, nil))
	if got := run.Required(); got != 0 {
		t.Fatalf("Required() = %d with 1 replica, want 0", got)
	}
	run.Take()
	ops = collect(t, run, "3 writes after Update", writesOK(3))
	for _, o := range ops {
		if o.Kind == model.OpWrite && (o.Acks != 0 || !o.OK) {
			t.Errorf("write %+v, want OK with Acks 0", o)
		}
	}
}

func TestValkeyWorkloadPausedPrimary(t *testing.T) {
	p := startPair(t, true, nil, nil)
	env := Env{Kube: fakeKube(clusterObjs()...), Namespace: testNS, CR: crObject("vk", 2, nil)}
	waitLinked(t, env, p)
	opts := fastOpts(p.port)
	run, err := NewValkeyWorkload(opts).Start(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer stopRun(t, run)
	collect(t, run, "5 writes", writesOK(5))

	if err := p.primary.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.primary.Resume() })
	paused := time.Now()
	ops := collect(t, run, "3 failed writes while paused", func(ops []model.Op) bool {
		return count(ops, func(o model.Op) bool { return o.Kind == model.OpWrite && !o.OK && o.Start.After(paused) }) >= 3
	})
	// Each op ends by its own timeout (RequestTimeout + WaitTimeout) while the
	// primary stays frozen: a hung op would never be collected as failed. How
	// long it took is not asserted (load stretches it); that it failed with a
	// timeout, not some other error, is.
	for _, o := range ops {
		if !o.Start.After(paused) {
			continue
		}
		if o.OK {
			t.Errorf("op %+v succeeded against a frozen primary", o)
		}
		if o.Err == "" {
			t.Errorf("failed op %+v has no Err", o)
		} else if e := strings.ToLower(o.Err); !strings.Contains(e, "timeout") && !strings.Contains(e, "deadline") {
			t.Errorf("op %s against a frozen primary failed with %q, want a timeout", o.Key, o.Err)
		}
	}

	if err := p.primary.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	collect(t, run, "writes succeed again after SIGCONT", func(ops []model.Op) bool {
		return count(ops, func(o model.Op) bool { return o.Kind == model.OpWrite && o.OK && o.Start.After(resumed) }) >= 3
	})
}

func TestValkeyWorkloadNoEndpoint(t *testing.T) {
	p := startPair(t, false, nil, nil)
	tests := []struct {
		name    string
		objs    []runtime.Object
		wantErr string
	}{
		{"no Service", []runtime.Object{podObject("vk", "vk-0", primaryIP, "primary")}, "does not exist"},
		{"no ready endpoint", []runtime.Object{serviceObject("vk"), sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, boolp(false)})}, "no ready endpoint"},
		{"auth secret missing", []runtime.Object{serviceObject("vk"), sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, nil})}, "spec.auth.passwordSecret) does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var spec map[string]any
			if strings.Contains(tc.name, "auth") {
				spec = map[string]any{"auth": map[string]any{"passwordSecret": map[string]any{"name": "pw", "key": "password"}}}
			}
			kube := fakeKube(tc.objs...)
			env := Env{Kube: kube, Namespace: testNS, CR: crObject("vk", 1, spec)}
			run, err := NewValkeyWorkload(fastOpts(p.port)).Start(context.Background(), env)
			if err != nil {
				t.Fatal(err)
			}
			defer stopRun(t, run)
			ops := collect(t, run, "3 failed writes", func(ops []model.Op) bool {
				return count(ops, func(o model.Op) bool { return o.Kind == model.OpWrite && !o.OK }) >= 3
			})
			for _, o := range ops {
				if o.OK || !strings.Contains(o.Err, tc.wantErr) || o.Acks != -1 || o.Start.IsZero() {
					t.Fatalf("op %+v, want a failed write (Acks -1) whose error contains %q", o, tc.wantErr)
				}
			}
		})
	}

	t.Run("endpoint appears", func(t *testing.T) {
		kube := fakeKube(serviceObject("vk"))
		env := Env{Kube: kube, Namespace: testNS, CR: crObject("vk", 1, nil)}
		run, err := NewValkeyWorkload(fastOpts(p.port)).Start(context.Background(), env)
		if err != nil {
			t.Fatal(err)
		}
		defer stopRun(t, run)
		collect(t, run, "a failed write", func(ops []model.Op) bool { return len(ops) > 0 })
		if _, err := kube.DiscoveryV1().EndpointSlices(testNS).Create(context.Background(), sliceObject("vk", "vk-abc", ep{"vk-0", primaryIP, nil}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		collect(t, run, "writes succeed once the endpoint is ready", writesOK(3))
	})
}

func TestValkeyWorkloadStop(t *testing.T) {
	p := startPair(t, false, nil, nil)
	env := Env{Kube: fakeKube(clusterObjs()...), Namespace: testNS, CR: crObject("vk", 1, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	run, err := NewValkeyWorkload(fastOpts(p.port)).Start(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, run, "a write", writesOK(1))
	cancel() // the run ends with its context
	time.Sleep(100 * time.Millisecond)
	run.Take()
	time.Sleep(200 * time.Millisecond)
	if ops := run.Take(); len(ops) != 0 {
		t.Errorf("%d ops recorded after the run's context ended", len(ops))
	}
	stopRun(t, run)
	stopRun(t, run) // idempotent

	for _, bad := range []Env{
		{Kube: env.Kube, Namespace: testNS},
		{Namespace: testNS, CR: env.CR},
	} {
		if _, err := NewValkeyWorkload(ValkeyWorkloadOptions{}).Start(context.Background(), bad); err == nil {
			t.Errorf("Start(%+v) succeeded, want an error", bad)
		}
	}
}

func TestValkeyRunRoundRobin(t *testing.T) {
	r := &valkeyRun{targets: []target{{addr: "a"}, {addr: "b"}}}
	var got []string
	for i := 0; i < 4; i++ {
		tg, err := r.pick()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tg.addr)
	}
	if fmt.Sprint(got) != "[a b a b]" {
		t.Errorf("picked %v, want the endpoints in turn", got)
	}
	r.targets = nil
	if _, err := r.pick(); err == nil {
		t.Error("pick with no target succeeded")
	}
}

// TestReadOnlyReplica: a write a replica refuses is marked ReadOnly (the
// durability oracle then knows the target answered as a replica); other
// errors are not.
func TestReadOnlyReplica(t *testing.T) {
	p := startPair(t, true, nil, nil)
	ctx := context.Background()
	rep := client(t, net.JoinHostPort(replicaIP, strconv.Itoa(p.port)), "")
	err := rep.Do(ctx, rep.B().Set().Key("k").Value("v").Build()).Error()
	if err == nil || !readOnlyReplica(err) {
		t.Fatalf("SET on a replica: %v, readOnlyReplica %v, want a READONLY refusal", err, readOnlyReplica(err))
	}
	prim := client(t, net.JoinHostPort(primaryIP, strconv.Itoa(p.port)), "")
	if err := prim.Do(ctx, prim.B().Set().Key("s").Value("text").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	err = prim.Do(ctx, prim.B().Incr().Key("s").Build()).Error()
	if err == nil || readOnlyReplica(err) {
		t.Fatalf("INCR on a string: %v, readOnlyReplica %v, want another error", err, readOnlyReplica(err))
	}
}
