package campaign

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/faults"
	"github.com/gauntlet-dev/gauntlet/model"
)

// fakeInjector is a back end with fixed capabilities (pure planning logic only).
type fakeInjector struct{ kinds []faults.Kind }

func (f fakeInjector) Capabilities() []faults.Kind             { return f.kinds }
func (fakeInjector) Inject(context.Context, faults.Spec) error { return nil }
func (fakeInjector) Remove(context.Context, faults.Spec) error { return nil }

func TestPlanFaultDeterministic(t *testing.T) {
	o := (&FaultOptions{}).withDefaults()
	seen := map[string]bool{}
	for idx := 1; idx < 200; idx++ {
		a := planFault(7, 1, idx, o, DefaultFaultKinds, true)
		b := planFault(7, 1, idx, o, DefaultFaultKinds, true)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: the same seed drew %+v and %+v", idx, a, b)
		}
		seen[a.Kind+"/"+a.Role] = true
		switch {
		case (a.Kind == FaultOperatorCrash || a.Kind == FaultOperatorPartition) && a.Role != "operator":
			t.Errorf("%s must target the operator, got %q", a.Kind, a.Role)
		case a.Kind == FaultOperatorCrash && (a.Delay < 0 || a.Delay >= 1500*time.Millisecond || !a.Persistent):
			t.Errorf("operator crash must strike 0-1.5 s into the next desired state: %+v", a)
		case a.Persistent && !lasting(a.Kind) && a.Kind != FaultOperatorCrash:
			t.Errorf("a %s cannot be held: %+v", a.Kind, a)
		case !lasting(a.Kind) && a.Hold != 0:
			t.Errorf("%s is transient but has a hold time: %+v", a.Kind, a)
		}
	}
	for _, want := range []string{"pod-kill/primary", "pod-kill/replica", "partition/primary", "operator-crash/operator"} {
		if !seen[want] {
			t.Errorf("200 draws never produced %s: %v", want, seen)
		}
	}
	if planFault(7, 1, 5, o, DefaultFaultKinds, true) == planFault(8, 1, 5, o, DefaultFaultKinds, true) &&
		planFault(7, 1, 6, o, DefaultFaultKinds, true) == planFault(8, 1, 6, o, DefaultFaultKinds, true) {
		t.Error("different seeds drew the same faults")
	}
	if p := planFault(7, 0, 3, o, []string{FaultPodKill}, false); p.Role != "pod" {
		t.Errorf("without a system monitor the target is any pod, got %q", p.Role)
	}
}

func TestSupportedKinds(t *testing.T) {
	inj := fakeInjector{kinds: []faults.Kind{faults.ContainerCrash, faults.PodKill, faults.Partition}}
	ok, bad := supportedKinds(inj, []string{FaultPodKill, FaultPodFailure, FaultOperatorCrash, "meteor"}, true, false)
	if !reflect.DeepEqual(ok, []string{FaultPodKill}) {
		t.Errorf("supported = %v, want [pod-kill]", ok)
	}
	if len(bad) != 3 || !strings.Contains(bad[0], "pod-failure") || !strings.Contains(bad[1], "out of cluster") || !strings.Contains(bad[2], "unknown fault kind") {
		t.Errorf("unsupported = %q", bad)
	}
}

func TestCandidatesFaultStep(t *testing.T) {
	base := model.Object{"spec": map[string]any{"a": int64(0)}}
	d := model.Object{"spec": map[string]any{"a": int64(1)}}
	p := &FaultPlan{Kind: FaultPodKill, Role: model.RolePrimary}
	f := &StepRecord{Step: model.Step{Kind: model.StepFault, Desired: d}, Current: d, FaultPlan: p}
	c := candidates(f, nil, base)
	if len(c) != 1 || len(c[0]) != 2 || c[0][0].Kind != model.StepApply || c[0][1].Fault != p {
		t.Fatalf("fault step candidates = %+v, want apply D then the same fault", c)
	}
	f.Desired = base
	if c := candidates(f, nil, base); len(c) != 1 || len(c[0]) != 1 || c[0][0].Fault != p {
		t.Fatalf("fault on S0: candidates = %+v, want the fault alone", c)
	}
}

func TestSamplerBound(t *testing.T) {
	sp := &sampler{}
	for i := 0; i < maxSamples*3; i++ {
		sp.add(model.SystemSample{Service: "s", Taken: time.Unix(int64(i), 0)})
	}
	if n := len(sp.samples); n > maxSamples || n < maxSamples/2 {
		t.Fatalf("kept %d samples, want between %d and %d", n, maxSamples/2, maxSamples)
	}
	if first := sp.samples[0].Taken.Unix(); first != 0 {
		t.Errorf("the first sample must be kept, got t=%d", first)
	}
	if last := sp.samples[len(sp.samples)-1].Taken.Unix(); last != int64(maxSamples*3-1) {
		t.Errorf("the last sample must be kept, got t=%d", last)
	}
}

func TestFingerprint(t *testing.T) {
	a := &model.SystemSample{Members: []model.Member{{Pod: "p0", Role: "primary", Reachable: true, Offset: 10}}, Selected: []string{"p0"}}
	b := &model.SystemSample{Members: []model.Member{{Pod: "p0", Role: "primary", Reachable: true, Offset: 99}}, Selected: []string{"p0"}}
	if fingerprint(a) != fingerprint(b) {
		t.Error("offsets move under a workload: they must not keep the system from settling")
	}
	b.Members[0].Role = "replica"
	if fingerprint(a) == fingerprint(b) {
		t.Error("a role change must change the fingerprint")
	}
}

func TestParseFaultKinds(t *testing.T) {
	tests := []struct {
		in      []string
		want    []string
		on, err bool
	}{
		{nil, nil, false, false},
		{[]string{"none"}, nil, false, false},
		{[]string{"all"}, DefaultFaultKinds, true, false},
		{[]string{"pod-kill", "partition", "pod-kill"}, []string{"pod-kill", "partition"}, true, false},
		{[]string{"pod-kill", "meteor"}, nil, false, true},
	}
	for _, tt := range tests {
		got, on, err := ParseFaultKinds(tt.in)
		if (err != nil) != tt.err || on != tt.on || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFaultKinds(%v) = %v, %v, %v; want %v, %v, error %v", tt.in, got, on, err, tt.want, tt.on, tt.err)
		}
		if err != nil && !strings.Contains(err.Error(), "meteor") {
			t.Errorf("the error must name the bad kind: %v", err)
		}
	}
}

// recordedActions replays a step with a fault: the API server refuses the
// desired state at once, the fault is injected and healed, and every call is
// recorded in order.
type recordedActions struct {
	refusal error
	calls   []string
}

func (a *recordedActions) declare(context.Context, model.Object, bool) (time.Time, time.Time, []string, error) {
	a.calls = append(a.calls, "declare")
	return time.Now(), time.Time{}, nil, a.refusal
}

func (a *recordedActions) inject(_ context.Context, p FaultPlan, _ model.Object, _ int) (*activeFault, error) {
	a.calls = append(a.calls, "inject "+p.Kind)
	return &activeFault{Lasting: lasting(p.Kind), Rec: model.Fault{Kind: p.Kind, Injected: time.Now()}}, nil
}

func (a *recordedActions) heal(_ context.Context, af *activeFault) error {
	a.calls = append(a.calls, "heal")
	af.Rec.Removed = time.Now()
	return nil
}

func (a *recordedActions) wait(context.Context, time.Time) (time.Time, []string, error) {
	a.calls = append(a.calls, "wait")
	return time.Now(), nil, nil
}

func (a *recordedActions) afterOperatorBack(_ context.Context, _ *StepRecord, _, c time.Time, nr []string) (time.Time, []string, error) {
	a.calls = append(a.calls, "operator back")
	return c, nr, nil
}

// TestRefusedApplyWithFaultWaits is the bundled operator's seed 1 (8 minutes,
// 2 workers): the API server refused a desired state (replicas 2 under an
// earlier podDisruptionBudget.maxUnavailable 2) that carried a persistent
// pod-failure on the primary; the step was judged the moment the fault was
// removed (convergeMs 0), mid-failover: "2 primaries". A step that carries a
// fault always waits for convergence after it, whatever the apply did.
func TestRefusedApplyWithFaultWaits(t *testing.T) {
	refusal := errors.New(`ValkeyCluster.valkey.gauntlet.dev "v" is invalid: spec: Invalid value: "object": podDisruptionBudget.maxUnavailable must be less than replicas`)
	for _, p := range []FaultPlan{
		{Kind: FaultPodFailure, Role: model.RolePrimary, Persistent: true, Hold: 30 * time.Millisecond},
		{Kind: FaultOperatorPartition, Role: "operator", Persistent: true, Hold: 30 * time.Millisecond},
		{Kind: FaultOperatorCrash, Role: "operator", Persistent: true, Delay: 20 * time.Millisecond},
	} {
		a := &recordedActions{refusal: refusal}
		rec := &StepRecord{}
		in := stepInput{kind: model.StepApply, index: 7, desired: model.Object{"spec": map[string]any{"replicas": int64(2)}}}
		_, c, _, err := driveFault(context.Background(), a, in, rec, &p)
		var ra *refusedApply
		ok := errors.As(err, &ra)
		if !ok || ra.Err != refusal || ra.Wait != nil {
			t.Errorf("%s: err = %v, want the refusal with a converged wait", p.Kind, err)
		}
		if c.IsZero() {
			t.Errorf("%s: no convergence time: the step would be judged the moment the fault ended", p.Kind)
		}
		last := slices.Index(a.calls, "wait")
		if last < 0 || (lasting(p.Kind) && last < slices.Index(a.calls, "heal")) {
			t.Errorf("%s: calls %v: the step must wait for convergence after the fault is removed", p.Kind, a.calls)
		}
		if len(rec.Faults) != 1 {
			t.Errorf("%s: faults recorded = %v", p.Kind, rec.Faults)
		}
	}
}
