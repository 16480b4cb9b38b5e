package oracles

import (
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

const goPanic = `{"level":"info","ts":"2025-03-01T10:03:01.220Z","logger":"valkeycluster","msg":"applying config","cluster":"gauntlet-w0/cache"}
panic: runtime error: index out of range [3] with length 3 [recovered]
	panic: runtime error: index out of range [3] with length 3

goroutine 231 [running]:
sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler.func1()
	/root/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.23.3/pkg/internal/controller/controller.go:198 +0x1f4
panic({0x1a2b3c0?, 0xc000a1b2c0?})
	/usr/local/go/src/runtime/panic.go:792 +0x132
github.com/gauntlet-dev/gauntlet/operator/internal/machine.(*Machine).stepConfig(0xc0004d2000, {0xc000612a80, 0x3, 0x3})
	/work/main/operator/internal/machine/config.go:141 +0x5a8
github.com/gauntlet-dev/gauntlet/operator/internal/machine.(*Machine).Step(...)
	/work/main/operator/internal/machine/machine.go:88 +0x2c1

{"level":"info","ts":"2025-03-01T10:03:04.001Z","logger":"setup","msg":"starting manager"}
`

const recoveredPanic = `{"level":"error","ts":"2025-03-01T10:03:12.5Z","msg":"Observed a panic","controller":"valkeycluster","reconcileID":"3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f8a9b0c","panic":"assignment to entry in nil map","stacktrace":"goroutine 412 [running]:\nk8s.io/apimachinery/pkg/util/runtime.logPanic({0x1f0c2a8, 0xc0009e4f30}, {0x19a1b60, 0x1f02e70})\n\t/root/go/pkg/mod/k8s.io/apimachinery@v0.35.4/pkg/util/runtime/runtime.go:132 +0xbc\nsigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller[...]).reconcileHandler.func1()\n\t/root/go/pkg/mod/sigs.k8s.io/controller-runtime@v0.23.3/pkg/internal/controller/controller.go:191 +0x1a5\npanic({0x19a1b60?, 0x1f02e70?})\n\t/usr/local/go/src/runtime/panic.go:792 +0x132\ngithub.com/gauntlet-dev/gauntlet/operator/internal/resources.UpdateConfigMap({0xc00052e000, {0x0, 0x0}}, 0xc0003f8280)\n\t/work/main/operator/internal/resources/config.go:38 +0x2d4"}
{"level":"error","ts":"2025-03-01T10:03:13.1Z","msg":"Observed a panic","controller":"valkeycluster","reconcileID":"8d1e2f3a-4b5c-4d6e-9f70-8192a3b4c5d6","panic":"assignment to entry in nil map","stacktrace":"goroutine 415 [running]:\nk8s.io/apimachinery/pkg/util/runtime.logPanic({0x1f0c2a8, 0xc0009e5000}, {0x19a1b60, 0x1f02e70})\n\t/root/go/pkg/mod/k8s.io/apimachinery@v0.35.4/pkg/util/runtime/runtime.go:132 +0xbc\ngithub.com/gauntlet-dev/gauntlet/operator/internal/resources.UpdateConfigMap({0xc00052e000, {0x0, 0x0}}, 0xc0003f8280)\n\t/work/main/operator/internal/resources/config.go:38 +0x2d4"}
`

// crashLoop puts container valkey of pod name in CrashLoopBackOff after restarts.
func crashLoop(t testing.TB, s *model.Snapshot, pod string, restarts float64) {
	t.Helper()
	p := "Pod/" + pod
	set(t, s, p, "status.containerStatuses[0].restartCount", restarts)
	set(t, s, p, "status.containerStatuses[0].ready", false)
	set(t, s, p, "status.containerStatuses[0].state", map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container=valkey pod=" + pod}})
	set(t, s, p, "status.containerStatuses[0].lastState", map[string]any{"terminated": map[string]any{"exitCode": 1.0, "reason": "Error", "startedAt": "2025-03-01T10:02:50Z", "finishedAt": "2025-03-01T10:02:51Z"}})
	set(t, s, p, "status.conditions[2].status", "False")
	set(t, s, p, "status.conditions[2].reason", "ContainersNotReady")
	set(t, s, p, "status.conditions[2].message", "containers with unready status: [valkey]")
}

func TestHealth(t *testing.T) {
	operator := Config{OperatorSelector: map[string]string{"app.kubernetes.io/name": "valkey-operator"}}
	cases := []struct {
		name  string
		cfg   Config
		step  func() *model.Step
		state func(t *testing.T, s *model.Snapshot)
		want  expectation
	}{
		{
			name:  "converged",
			cfg:   operator,
			state: func(t *testing.T, s *model.Snapshot) {},
		},
		{
			name: "crash-loop",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				crashLoop(t, s, "cache-1", 4)
				set(t, s, "StatefulSet/cache", "status.readyReplicas", 2.0)
				set(t, s, "StatefulSet/cache", "status.availableReplicas", 2.0)
				s.Events = append(s.Events, model.Event{Time: t0, Type: "Warning", Reason: "BackOff", Message: "Back-off restarting failed container valkey in pod cache-1", Object: keyOf(t, s, "Pod/cache-1")})
			},
			want: expectation{n: 2, contains: []string{
				"container valkey of pod cache-1 is crash-looping (CrashLoopBackOff, restarted 4 times)",
				"StatefulSet cache is not ready after convergence: 2 of 3 replicas ready",
			}},
		},
		{
			name: "crash-loop-on-several-pods-is-one-finding",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				crashLoop(t, s, "cache-1", 3)
				crashLoop(t, s, "cache-2", 5)
				set(t, s, "StatefulSet/cache", "status.readyReplicas", 1.0)
			},
			want: expectation{n: 2, contains: []string{"(and 1 more like it)"}},
		},
		{
			name: "operator-panic",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				s.OperatorLog = goPanic
				p := "Pod/valkey-operator-5d8f7c9b4f-x7k2p"
				set(t, s, p, "status.containerStatuses[0].restartCount", 1.0)
				set(t, s, p, "status.containerStatuses[0].lastState", map[string]any{"terminated": map[string]any{"exitCode": 2.0, "reason": "Error"}})
			},
			want: expectation{n: 2, contains: []string{
				"the operator panicked: runtime error: index out of range [3] with length 3 (in github.com/gauntlet-dev/gauntlet/operator/internal/machine.(*Machine).stepConfig)",
				"the operator restarted: container manager of pod valkey-operator-5d8f7c9b4f-x7k2p restarted once",
			}},
		},
		{
			name:  "recovered-panic-logged-twice",
			cfg:   operator,
			state: func(t *testing.T, s *model.Snapshot) { s.OperatorLog = recoveredPanic },
			want: expectation{n: 1, contains: []string{
				"the operator panicked: assignment to entry in nil map (in github.com/gauntlet-dev/gauntlet/operator/internal/resources.UpdateConfigMap) (and 1 more like it)",
			}},
		},
		{
			name: "log-pattern",
			cfg:  Config{LogPatterns: []string{`"level":"error"`}},
			state: func(t *testing.T, s *model.Snapshot) {
				s.OperatorLog = `{"level":"error","ts":"2025-03-01T10:03:12.5Z","msg":"Reconciler error","error":"update StatefulSet gauntlet-w0/cache: Operation cannot be fulfilled"}` + "\n"
			},
			want: expectation{n: 1, contains: []string{"operator log: update StatefulSet gauntlet-w0/cache: Operation cannot be fulfilled"}},
		},
		{
			name: "cr-reports-failure",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "ValkeyCluster/cache", "status.conditions[0]", map[string]any{
					"type": "Ready", "status": "False", "reason": "ConfigRejected", "observedGeneration": 1.0,
					"message":            `maxmemory "lots" rejected by cache-0: ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value`,
					"lastTransitionTime": "2025-03-01T10:03:02Z",
				})
				set(t, s, "ValkeyCluster/cache", "status.phase", "Failed")
			},
			want: expectation{n: 2, contains: []string{"reports condition Ready=False (ConfigRejected)", "reports phase Failed"}},
		},
		{
			name: "convergence-timeout",
			cfg:  operator,
			step: func() *model.Step {
				s := step(model.StepApply, "spec.replicas")
				s.TimedOut, s.Converged = true, time.Time{}
				return s
			},
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "ValkeyCluster/cache", "metadata.generation", 2.0)
				set(t, s, "ValkeyCluster/cache", "status.phase", "Updating")
				set(t, s, "StatefulSet/cache", "spec.replicas", 5.0)
				set(t, s, "StatefulSet/cache", "status.updatedReplicas", 5.0)
				set(t, s, "StatefulSet/cache", "status.readyReplicas", 3.0)
			},
			want: expectation{n: 2, contains: []string{
				"convergence timeout: the system kept changing or never became ready after apply changing spec.replicas",
				"StatefulSet cache is not ready after convergence: 3 of 5 replicas ready",
			}},
		},
		{
			name: "restart-excused-by-fault",
			cfg:  operator,
			step: func() *model.Step {
				s := step(model.StepFault)
				s.Faults = []model.Fault{{Kind: "container-crash", Targets: []string{"cache-1"}, Injected: t0, Removed: t0.Add(5 * time.Second)}}
				return s
			},
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "Pod/cache-1", "status.containerStatuses[0].restartCount", 1.0)
			},
		},
		{
			name: "operator-crash-fault-excuses-operator-restart",
			cfg:  operator,
			step: func() *model.Step {
				s := step(model.StepFault)
				s.Faults = []model.Fault{{Kind: "operator-crash", Targets: []string{"operator"}, Injected: t0, Removed: t0.Add(time.Second)}}
				return s
			},
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "Pod/valkey-operator-5d8f7c9b4f-x7k2p", "status.containerStatuses[0].restartCount", 1.0)
			},
		},
		{
			name: "crash-loop-outlives-removed-fault",
			cfg:  operator,
			step: func() *model.Step {
				s := step(model.StepFault)
				s.Faults = []model.Fault{{Kind: "container-crash", Targets: []string{"primary"}, Injected: t0, Removed: t0.Add(5 * time.Second)}}
				return s
			},
			state: func(t *testing.T, s *model.Snapshot) {
				crashLoop(t, s, "cache-0", 6)
				set(t, s, "StatefulSet/cache", "status.readyReplicas", 2.0)
			},
			want: expectation{n: 2, contains: []string{"container valkey of pod cache-0 is crash-looping"}},
		},
		{
			name: "unsupported-fault-excuses-nothing",
			cfg:  operator,
			step: func() *model.Step {
				s := step(model.StepFault)
				s.Faults = []model.Fault{{Kind: "network-delay", Targets: []string{"cache-1"}, Injected: t0, Unsupported: "no netem in this kernel"}}
				return s
			},
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "Pod/cache-1", "status.containerStatuses[0].restartCount", 2.0)
			},
			want: expectation{n: 1, contains: []string{"container valkey of pod cache-1 restarted 2 times"}},
		},
		{
			name: "failed-backup-job",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				s.Objects["batch/v1/Job/gauntlet-w0/cache-backup-nightly"] = model.Object{
					"apiVersion": "batch/v1", "kind": "Job",
					"metadata": map[string]any{"name": "cache-backup-nightly", "namespace": "gauntlet-w0"},
					"spec":     map[string]any{"backoffLimit": 2.0},
					"status": map[string]any{"failed": 3.0, "conditions": []any{map[string]any{
						"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "Job has reached the specified backoff limit",
					}}},
				}
			},
			want: expectation{n: 1, contains: []string{"Job cache-backup-nightly is not ready after convergence: failed: BackoffLimitExceeded"}},
		},
		{
			name: "unready-standalone-pod",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				p := copyAs(t, s, "Pod/cache-2", "cache-debug")
				setIn(t, p, "metadata.ownerReferences", []any{})
				setIn(t, p, "status.phase", "Pending")
				setIn(t, p, "status.conditions[2].status", "False")
			},
			want: expectation{n: 1, contains: []string{"Pod cache-debug is not ready after convergence: phase Pending"}},
		},
		{
			name: "recreated-pod-counts-from-zero",
			cfg:  operator,
			state: func(t *testing.T, s *model.Snapshot) {
				set(t, s, "Pod/cache-2", "metadata.uid", "11111111-aaaa-4bbb-8ccc-0000000000f2")
				set(t, s, "Pod/cache-2", "status.containerStatuses[0].restartCount", 0.0)
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev := loadSnapshot(t, "s0")
			curr := loadSnapshot(t, "s0")
			c.state(t, curr)
			st := step(model.StepApply)
			if c.step != nil {
				st = c.step()
			}
			fs := run(NewHealth(c.cfg), &model.Transition{Step: st, Prev: prev, Curr: curr})
			c.want.check(t, fs)
			checkGolden(t, "health", c.name, fs)
		})
	}
}

// The same panic on two steps (other goroutine numbers, addresses, times) has one signature.
func TestHealthPanicSignatureStable(t *testing.T) {
	other := strings.NewReplacer("goroutine 231", "goroutine 9017", "0xc0004d2000", "0xc000ff0000", "10:03:01.220", "11:47:09.004").Replace(goPanic)
	sig := func(log string) string {
		s := loadSnapshot(t, "s0")
		s.OperatorLog = log
		fs := run(NewHealth(Config{}), &model.Transition{Step: step(model.StepApply), Curr: s})
		if len(fs) != 1 {
			t.Fatalf("got %d findings, want 1", len(fs))
		}
		return fs[0].Signature
	}
	if a, b := sig(goPanic), sig(other); a != b {
		t.Errorf("signatures differ: %s vs %s", a, b)
	}
}

func TestScanLog(t *testing.T) {
	cases := []struct {
		name  string
		log   string
		kinds []string
		frame string
	}{
		{"empty", "", nil, ""},
		{"info only", `{"level":"info","msg":"ok"}` + "\n", nil, ""},
		{"go panic", goPanic, []string{"panic"}, "github.com/gauntlet-dev/gauntlet/operator/internal/machine.(*Machine).stepConfig"},
		{"fatal error", "fatal error: concurrent map writes\n\ngoroutine 7 [running]:\nmain.update(0x1)\n\t/src/main.go:10 +0x1\n", []string{"fatal"}, "main.update"},
		{"panic without stack then more log", "panic: boom\nsomething\nelse\nentirely\nlater line\n", []string{"panic"}, ""},
		{"two panics", "panic: a\n\ngoroutine 1 [running]:\nmain.a()\n\t/x.go:1\n\npanic: b\n\ngoroutine 2 [running]:\nmain.b()\n\t/x.go:2\n", []string{"panic", "panic"}, "main.a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs := scanLog(c.log, nil)
			var kinds []string
			for _, e := range evs {
				kinds = append(kinds, e.kind)
			}
			if strings.Join(kinds, ",") != strings.Join(c.kinds, ",") {
				t.Fatalf("kinds %v, want %v", kinds, c.kinds)
			}
			if len(evs) > 0 && evs[0].frame != c.frame {
				t.Errorf("frame %q, want %q", evs[0].frame, c.frame)
			}
		})
	}
}

func TestNormMessage(t *testing.T) {
	cases := []struct{ in, want string }{
		{"index out of range [3] with length 3", "index out of range [N] with length N"},
		{"pod gauntlet-w0/valkey-operator-5d8f7c9b4f-x7k2p failed", "pod <namespace>/valkey-operator-*-* failed"},
		{"reconcileID 3f2b8c1e-9d4a-4e7b-a1c2-5d6e7f8a9b0c at 0xc000a1b2c0", "reconcileID <uuid> at <addr>"},
		{"a-nginx stays", "a-nginx stays"},
	}
	for _, c := range cases {
		if got := normMessage(c.in, "gauntlet-w0"); got != c.want {
			t.Errorf("normMessage(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
