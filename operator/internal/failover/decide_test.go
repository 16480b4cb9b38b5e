package failover

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ip(ord int) string { return fmt.Sprintf("10.0.0.%d", 10+ord) }

func base(name string, ord int) Pod {
	return Pod{Name: name, Ordinal: ord, IP: ip(ord), Running: true, Ready: true, UpToDate: true, Observed: true}
}

func master(ord int, offset, keys int64) Pod {
	p := base(fmt.Sprintf("v-%d", ord), ord)
	p.Label = LabelPrimary
	p.Info = valkey.Info{Role: valkey.RoleMaster, MasterReplOffset: offset, Keys: keys, RunID: fmt.Sprintf("run%d", ord),
		ReplicaPriority: 100, FailoverState: "no-failover", MasterLinkDownSinceSeconds: -1, UptimeSeconds: 1000}
	return p
}

func replica(ord, of int, offset, keys int64) Pod {
	p := base(fmt.Sprintf("v-%d", ord), ord)
	p.Label = LabelReplica
	p.Info = valkey.Info{Role: valkey.RoleSlave, MasterHost: ip(of), MasterPort: 6379, MasterLinkUp: true,
		ReplicaOffset: offset, Keys: keys, RunID: fmt.Sprintf("run%d", ord), ReplicaPriority: 100,
		MasterLinkDownSinceSeconds: -1, UptimeSeconds: 1000}
	return p
}

func fenced(ord int, offset, keys int64) Pod {
	p := base(fmt.Sprintf("v-%d", ord), ord)
	p.Ready = false
	p.Info = valkey.Info{Role: valkey.RoleSlave, MasterHost: "127.0.0.1", MasterPort: 1, ReplicaOffset: offset, Keys: keys,
		RunID: fmt.Sprintf("run%d", ord), ReplicaPriority: 100, MasterLinkDownSinceSeconds: -1, UptimeSeconds: 3}
	return p
}

func with(p Pod, f func(*Pod)) Pod { f(&p); return p }

func view(primary string, pods ...Pod) View {
	return View{Pods: pods, Primary: primary, Port: 6379, FenceHost: "127.0.0.1", FencePort: 1, Now: t0,
		DownAfter: 5 * time.Second, Replicas: 3}
}

func TestDecide(t *testing.T) {
	down := func(p *Pod) { p.Down, p.Observed, p.DownSince = true, false, t0.Add(-6*time.Second) }
	unknown := func(p *Pod) { p.Observed = false }
	linkDownFor := func(s int64) func(*Pod) {
		return func(p *Pod) { p.Info.MasterLinkUp, p.Info.MasterLinkDownSinceSeconds = false, s }
	}
	tests := []struct {
		name   string
		v      View
		kind   Kind
		pod    string
		target string
		reason string // substring
	}{
		{"bootstrap records the lowest ordinal among equals",
			view("", with(fenced(0, 0, 0), func(p *Pod) {}), fenced(1, 0, 0), fenced(2, 0, 0)), Record, "v-0", "", "bootstrap"},
		{"bootstrap prefers the pod with the most data",
			view("", fenced(0, 0, 0), fenced(1, 500, 7), fenced(2, 100, 3)), Record, "v-1", "", "bootstrap"},
		{"bootstrap waits for pods that are starting",
			view("", fenced(0, 0, 0), with(fenced(1, 0, 0), unknown)), Wait, "", "", "incomplete view"},
		{"bootstrap waits for every ordinal within the grace period",
			with3(view("", fenced(1, 0, 0), fenced(2, 0, 0)), func(v *View) { v.BootstrapGrace = 30 * time.Second }), Wait, "", "", "missing ordinals 0"},
		{"bootstrap proceeds without a missing pod after the grace period",
			with3(view("", with(fenced(1, 0, 0), func(p *Pod) { p.Age = time.Minute }), fenced(2, 0, 0)), func(v *View) { v.BootstrapGrace = 30 * time.Second }), Record, "v-1", "", "bootstrap"},
		{"recorded bootstrap primary is promoted, not re-chosen",
			view("v-0", fenced(0, 0, 0), fenced(1, 0, 0), fenced(2, 0, 0)), Promote, "v-0", "", "restarted"},
		{"serving primary without label is labelled",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { p.Label = "" }), replica(1, 0, 10, 1)), Label, "v-0", "", "serving"},
		{"label on a pod that is not the recorded primary is removed first",
			view("v-0", master(0, 10, 1), with(replica(1, 0, 10, 1), func(p *Pod) { p.Label = LabelPrimary })), Unlabel, "v-1", "", "not the recorded"},
		{"label removed from a primary reporting slave",
			view("v-0", with(fenced(0, 0, 0), func(p *Pod) { p.Label = LabelPrimary }), replica(1, 0, 10, 1)), Unlabel, "v-0", "", "reports role slave"},
		{"label kept on a primary that missed one check",
			view("v-0", with(master(0, 10, 1), unknown), replica(1, 0, 10, 1)), Wait, "", "", "not down yet"},
		{"fenced replica is pointed at the primary",
			view("v-0", master(0, 10, 1), replica(1, 0, 10, 1), fenced(2, 0, 0)), Replicate, "v-2", "v-0", "replicate"},
		{"replica of a wrong address is repointed",
			view("v-0", master(0, 10, 1), replica(1, 2, 10, 1), replica(2, 0, 10, 1)), Replicate, "v-1", "v-0", ""},
		{"second master is demoted",
			view("v-0", master(0, 10, 1), with(master(1, 5, 1), func(p *Pod) { p.Label = "" }), replica(2, 0, 10, 1)), Replicate, "v-1", "v-0", "second master"},
		{"empty primary never feeds a replica with data",
			view("v-0", master(0, 0, 0), fenced(1, 900, 50)), Hold, "v-1", "", "refusing"},
		{"replica labels follow",
			view("v-0", master(0, 10, 1), with(replica(1, 0, 10, 1), func(p *Pod) { p.Label = "" })), Label, "v-1", "", ""},
		{"converged",
			view("v-0", master(0, 10, 1), replica(1, 0, 10, 1), replica(2, 0, 10, 1)), None, "", "", ""},
		{"primary down: best replica by offset is recorded",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), with(replica(1, 0, 100, 1), linkDownFor(6)), with(replica(2, 0, 200, 1), linkDownFor(6))), Record, "v-2", "", "down"},
		{"primary down: labelled primary loses its label first",
			view("v-0", with(master(0, 10, 1), down), replica(1, 0, 100, 1), replica(2, 0, 200, 1)), Unlabel, "v-0", "", "down"},
		{"primary down: recorded candidate is promoted",
			view("v-2", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), replica(1, 0, 100, 1), replica(2, 0, 200, 1)), Promote, "v-2", "", ""},
		{"primary down: partial view refuses to act",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), with(replica(1, 0, 100, 1), unknown), replica(2, 0, 200, 1)), Wait, "", "", "incomplete view"},
		{"primary down: priority 0 excluded",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), replica(1, 0, 100, 1), with(replica(2, 0, 200, 1), func(p *Pod) { p.Info.ReplicaPriority = 0 })), Record, "v-1", "", ""},
		{"primary down: lower priority preferred to offset",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), with(replica(1, 0, 100, 1), func(p *Pod) { p.Info.ReplicaPriority = 10 }), replica(2, 0, 200, 1)), Record, "v-1", "", ""},
		{"primary down: replica disconnected too long excluded",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), replica(1, 0, 100, 1), with(replica(2, 0, 200, 1), linkDownFor(3600))), Record, "v-1", "", ""},
		{"primary down: only stale data left is held, not overwritten",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), fenced(1, 0, 0), with(replica(2, 0, 200, 9), linkDownFor(3600))), Hold, "v-1", "", "cannot be promoted"},
		{"primary pod gone",
			view("v-0", with(replica(1, 0, 100, 1), linkDownFor(1)), with(replica(2, 0, 200, 1), linkDownFor(1))), Record, "v-2", "", "does not exist"},
		{"restarted empty primary loses to replicas with data",
			view("v-0", fenced(0, 0, 0), with(replica(1, 0, 100, 5), linkDownFor(2)), with(replica(2, 0, 200, 5), linkDownFor(2))), Record, "v-2", "", "restarted"},
		{"restarted primary that reloaded its data keeps the role",
			view("v-0", fenced(0, 300, 5), with(replica(1, 0, 200, 5), linkDownFor(2)), with(replica(2, 0, 200, 5), linkDownFor(2))), Promote, "v-0", "", "restarted"},
		{"switchover completed before it was recorded is adopted",
			view("v-0", with(replica(0, 1, 50, 1), func(p *Pod) { p.Label = "" }), with(master(1, 50, 1), func(p *Pod) { p.Label = "" }), replica(2, 0, 50, 1)), Record, "v-1", "", "switchover"},
		{"switchover in progress is awaited",
			view("v-0", with(master(0, 50, 1), func(p *Pod) { p.Info.FailoverState = "waiting-for-sync" }), replica(1, 0, 50, 1)), Wait, "", "", "switchover in progress"},
		{"deleting primary hands over while it answers",
			view("v-0", with(master(0, 50, 1), func(p *Pod) { p.Deleting = true }), replica(1, 0, 40, 1), replica(2, 0, 50, 1)), Switchover, "v-0", "v-2", "deleted"},
		{"deleting primary that is silent is failed over",
			view("v-0", with(master(0, 50, 1), func(p *Pod) { p.Deleting, p.Observed, p.Label = true, false, "" }), with(replica(1, 0, 40, 1), linkDownFor(1)), with(replica(2, 0, 50, 1), linkDownFor(1))), Record, "v-2", "", "being deleted"},
		{"deleting primary silent to the operator but linked to a replica is fenced",
			view("v-0", with(master(0, 50, 1), func(p *Pod) { p.Deleting, p.Observed, p.Label = true, false, "" }), with(replica(1, 0, 40, 1), linkDownFor(1)), replica(2, 0, 50, 1)), Fence, "v-0", "", "no pod serves"},
		{"the old process of a primary replaced after a grace-0 deletion is fenced before any promotion",
			view("v-0", with(fenced(0, 0, 0), func(p *Pod) { p.IP = "10.0.0.99"; p.Label = "" }), replica(1, 0, 40, 1), replica(2, 0, 50, 1)), Fence, "v-0", "", "10.0.0.10:6379, which no pod serves"},
		{"the primary's pod gone while its process runs: fenced",
			view("v-0", replica(1, 0, 40, 1), with(replica(2, 0, 50, 1), linkDownFor(1))), Fence, "", "", "v-1 replicates from 10.0.0.10"},
		{"once fenced, the replica with the most data is promoted",
			view("v-0", with(fenced(0, 0, 0), func(p *Pod) { p.IP = "10.0.0.99"; p.Label = "" }), with(replica(1, 0, 40, 1), linkDownFor(1)), with(replica(2, 0, 50, 1), linkDownFor(1))), Record, "v-2", "", "restarted"},
		{"a fenced ghost keeps its replicas linked, and the failover proceeds",
			with3(view("v-0", with(fenced(0, 0, 0), func(p *Pod) { p.IP = "10.0.0.99"; p.Label = "" }), replica(1, 0, 40, 1), replica(2, 0, 50, 1)),
				func(v *View) {
					v.Ghosts = map[string]valkey.Info{ip(0): {Role: valkey.RoleSlave, MasterHost: "127.0.0.1", MasterPort: 1}}
				}), Record, "v-2", "", "restarted"},
		{"a ghost that still reports role master after the fence is fenced again",
			with3(view("v-0", with(fenced(0, 0, 0), func(p *Pod) { p.IP = "10.0.0.99"; p.Label = "" }), replica(1, 0, 40, 1), replica(2, 0, 50, 1)),
				func(v *View) { v.Ghosts = map[string]valkey.Info{ip(0): {Role: valkey.RoleMaster}} }), Fence, "v-0", "", "no pod serves"},
		{"a replica acknowledging a ghost's writes while a primary serves: the ghost is fenced first",
			view("v-1", with(replica(0, 9, 40, 1), func(p *Pod) { p.Label = "" }), master(1, 50, 1), replica(2, 1, 50, 1)), Fence, "", "", "v-0 replicates from 10.0.0.19"},
		{"a replica of a replica is re-pointed, not fenced",
			view("v-1", replica(0, 2, 40, 1), master(1, 50, 1), replica(2, 1, 50, 1)), Replicate, "v-0", "v-1", "replicate"},
		{"a frozen primary is not waited for",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), replica(1, 0, 100, 1), replica(2, 0, 200, 1)), Record, "v-2", "", "down"},
		{"scale-in switches the primary to a surviving ordinal",
			with3(view("v-2", replica(0, 2, 50, 1), replica(1, 2, 50, 1), master(2, 50, 1)), func(v *View) { v.Replicas = 2 }), Switchover, "v-2", "v-0", "scaling"},
		{"no candidate at all waits",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" })), Wait, "", "", "no pod can be promoted"},
		// Found by an untuned Gauntlet bench campaign: a one-pod cluster given a pod
		// affinity no node satisfies re-created its primary Pending; after the
		// roll-back nothing could be promoted and the operator waited for ever.
		{"a one-pod cluster whose primary is Pending at an old revision replaces it",
			with3(view("v-0", with(master(0, 10, 1), func(p *Pod) {
				p.UpToDate, p.Running, p.Ready, p.Observed, p.IP, p.Info, p.Label = false, false, false, false, "", valkey.Info{}, ""
			})), func(v *View) { v.Replicas = 1 }), DeletePod, "v-0", "", "replaced from the current template"},
		{"a Pending primary at the current revision is waited for",
			with3(view("v-0", with(master(0, 10, 1), func(p *Pod) {
				p.Running, p.Ready, p.Observed, p.IP, p.Info, p.Label = false, false, false, "", valkey.Info{}, ""
			})), func(v *View) { v.Replicas = 1 }), Wait, "", "", "no pod can be promoted"},
		{"loading replica is not a candidate",
			view("v-0", with(master(0, 10, 1), func(p *Pod) { down(p); p.Label = "" }), with(replica(1, 0, 900, 1), func(p *Pod) { p.Info.Loading = true }), replica(2, 0, 200, 1)), Record, "v-2", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(tt.v)
			if got.Kind != tt.kind || got.Pod != tt.pod || got.Target != tt.target || !strings.Contains(got.Reason, tt.reason) {
				t.Fatalf("Decide = %v; want %v %s -> %s (%q)", got, tt.kind, tt.pod, tt.target, tt.reason)
			}
		})
	}
}

func with3(v View, f func(*View)) View { f(&v); return v }

func TestPlanRoll(t *testing.T) {
	old := func(p *Pod) { p.UpToDate = false }
	// pending: never scheduled, from an old template (no IP, no container, no INFO).
	pending := func(p *Pod) {
		p.UpToDate, p.Running, p.Ready, p.Observed, p.IP, p.Info = false, false, false, false, "", valkey.Info{}
	}
	// crashed: an old template's Valkey container waits in CrashLoopBackOff.
	crashed := func(p *Pod) {
		p.UpToDate, p.Running, p.Ready, p.Observed, p.Info = false, false, false, false, valkey.Info{}
	}
	tests := []struct {
		name   string
		v      View
		kind   Kind
		pod    string
		target string
	}{
		{"nothing outdated", view("v-0", master(0, 1, 1), replica(1, 0, 1, 1), replica(2, 0, 1, 1)), None, "", ""},
		{"highest outdated replica first",
			view("v-0", with(master(0, 1, 1), old), with(replica(1, 0, 1, 1), old), with(replica(2, 0, 1, 1), old)), DeletePod, "v-2", ""},
		{"waits for the restarted replica to sync",
			view("v-0", with(master(0, 1, 1), old), with(replica(1, 0, 1, 1), old), with(replica(2, 0, 1, 1), func(p *Pod) { p.Info.MasterLinkUp = false; p.Ready = false })), Wait, "", ""},
		{"primary last, through a switchover to an updated replica",
			view("v-0", with(master(0, 1, 1), old), replica(1, 0, 1, 1), replica(2, 0, 2, 1)), Switchover, "v-0", "v-2"},
		{"waits for a serving primary",
			view("v-0", with(fenced(0, 1, 1), old), replica(1, 0, 1, 1)), Wait, "", ""},
		{"waits for missing pods",
			view("v-0", with(master(0, 1, 1), old), replica(1, 0, 1, 1)), Wait, "", ""},
		{"single pod restarts in place",
			with3(view("v-0", with(master(0, 1, 1), old)), func(v *View) { v.Replicas = 1 }), DeletePod, "v-0", ""},
		// Found by an untuned Gauntlet campaign: a replica re-created from a template
		// that asked for more CPU than any node has stayed Pending; after the
		// rollback it was outdated and the roll waited for it to serve, forever.
		{"an outdated replica that does not run is replaced at once",
			view("v-0", master(0, 1, 1), replica(1, 0, 1, 1), with(replica(2, 0, 0, 0), pending)), DeletePod, "v-2", ""},
		{"an outdated crash-looping replica is replaced at once",
			view("v-0", master(0, 1, 1), with(replica(1, 0, 0, 0), crashed), replica(2, 0, 1, 1)), DeletePod, "v-1", ""},
		{"an up-to-date replica that does not run is waited for",
			view("v-0", with(master(0, 1, 1), old), replica(1, 0, 1, 1), with(replica(2, 0, 0, 0), func(p *Pod) { pending(p); p.UpToDate = true })), Wait, "", ""},
		// Found by an untuned Gauntlet campaign (seed 2): after a roll-back of
		// spec.exporter.image, a replica from the bad template ran Valkey but its
		// exporter sidecar could not be pulled, so it never became Ready.
		{"an outdated replica with a stalled sidecar is replaced at once",
			view("v-0", master(0, 1, 1), replica(1, 0, 1, 1), with(replica(2, 0, 1, 1), func(p *Pod) { old(p); p.Ready, p.Stalled = false, true })), DeletePod, "v-2", ""},
		{"an up-to-date replica with a stalled sidecar is waited for",
			view("v-0", with(master(0, 1, 1), old), replica(1, 0, 1, 1), with(replica(2, 0, 1, 1), func(p *Pod) { p.Ready, p.Stalled = false, true })), Wait, "", ""},
		// Found by an untuned Gauntlet campaign (bench seed 1): spec.exporter.image
		// set to a Valkey image crash-looped the exporter on every pod; after the
		// roll-back the replica was re-created, but the primary — serving, its
		// exporter crash-looping — was outdated and never Ready, and the roll
		// waited for it to serve before switching over from it, forever.
		{"an outdated primary with a stalled sidecar is switched over from",
			view("v-0", with(master(0, 1, 1), func(p *Pod) { old(p); p.Ready, p.Stalled = false, true }), replica(1, 0, 1, 1), replica(2, 0, 2, 1)), Switchover, "v-0", "v-2"},
		{"an outdated primary not ready without a stalled container is waited for",
			view("v-0", with(master(0, 1, 1), func(p *Pod) { old(p); p.Ready = false }), replica(1, 0, 1, 1), replica(2, 0, 2, 1)), Wait, "", ""},
		{"an outdated replica being deleted is waited for",
			view("v-0", master(0, 1, 1), replica(1, 0, 1, 1), with(replica(2, 0, 0, 0), func(p *Pod) { pending(p); p.Deleting = true })), Wait, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PlanRoll(tt.v)
			if got.Kind != tt.kind || got.Pod != tt.pod || got.Target != tt.target {
				t.Fatalf("PlanRoll = %v; want %v %s -> %s", got, tt.kind, tt.pod, tt.target)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	h := NewHealth("10.0.0.1:6379", t0)
	steps := []struct {
		at       time.Duration
		ok       bool
		downAt   time.Duration // when checked for SDOWN
		wantDown bool
	}{
		{0, true, 0, false},
		{time.Second, false, time.Second, false},
		{2 * time.Second, false, 5*time.Second - 1, false}, // last OK at 0: just under 5s
		{3 * time.Second, false, 5 * time.Second, true},    // 5s since the last OK
		{4 * time.Second, true, 4 * time.Second, false},    // a success clears it
		{5 * time.Second, false, 9*time.Second - 1, false}, // failures since 4s: 4.99s
		{6 * time.Second, false, 9 * time.Second, true},    // exactly downAfter
	}
	for i, s := range steps {
		h = h.Record(Check{At: t0.Add(s.at), OK: s.ok, Err: "timeout"})
		if got := h.SubjectivelyDown(t0.Add(s.downAt), 5*time.Second); got != s.wantDown {
			t.Fatalf("step %d: SubjectivelyDown = %v, want %v (health %+v)", i, got, s.wantDown, h)
		}
	}
	if h.ConsecutiveFailures != 2 || h.Checks != len(steps) || h.LastError != "timeout" {
		t.Fatalf("counters: %+v", h)
	}
	// Never answered: down after downAfter from the start of tracking.
	n := NewHealth("x", t0).Record(Check{At: t0.Add(time.Second), OK: false})
	if n.SubjectivelyDown(t0.Add(4*time.Second), 5*time.Second) || !n.SubjectivelyDown(t0.Add(5*time.Second), 5*time.Second) {
		t.Fatalf("never-answering pod: %+v", n)
	}
}
