package replay

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/faults"
)

// recorder is an injector that records what it was asked and refuses kinds it lacks.
type recorder struct {
	kinds            []faults.Kind
	injected, healed []faults.Spec
}

func (r *recorder) Capabilities() []faults.Kind { return r.kinds }
func (r *recorder) Inject(_ context.Context, s faults.Spec) error {
	if !faults.Supports(r, s.Kind) {
		return faults.ErrUnsupported
	}
	r.injected = append(r.injected, s)
	return nil
}
func (r *recorder) Remove(_ context.Context, s faults.Spec) error {
	r.healed = append(r.healed, s)
	return nil
}

// TestFaultSpecInjectHeal: an operator fault targets the operator pod Pick
// chooses, a system fault the pod the picker returns; a pod kill has grace 0;
// a lasting fault is healed once, a transient one never; an unsupported kind
// is recorded, not an error.
func TestFaultSpecInjectHeal(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "op", Labels: map[string]string{"app": "op"}}}
	}
	k := newKube("t", dynfake.NewSimpleDynamicClient(runtime.NewScheme()), fake.NewClientset(pod("op-b"), pod("op-a")), slog.New(slog.NewTextHandler(io.Discard, nil)))
	k.SetOperator("op", map[string]string{"app": "op"})
	ctx := context.Background()
	picked := func(context.Context, FaultPlan) (string, []string, error) {
		return "vk-1", []string{"vk-0", "vk-2"}, nil
	}

	spec, err := k.FaultSpec(ctx, FaultPlan{Kind: FaultOperatorPartition, Role: RoleOperator, Pick: 3}, "ns", "f1", picked)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Kind != faults.APIServerPartition || spec.Namespace != "op" || spec.Pods[0] != "op-b" {
		t.Errorf("operator partition spec = %+v, want apiserver-partition of op/op-b (pick 3 of [op-a op-b])", spec)
	}
	inj := &recorder{kinds: []faults.Kind{faults.APIServerPartition, faults.PodKill}}
	af, err := Inject(ctx, inj, FaultPlan{Kind: FaultOperatorPartition, Role: RoleOperator}, spec)
	if err != nil || !af.Lasting || af.Rec.Targets[0] != "operator op/op-b" || af.Rec.Injected.IsZero() {
		t.Fatalf("Inject = %+v, %v", af, err)
	}
	if err := Heal(ctx, inj, af); err != nil || len(inj.healed) != 1 || af.Rec.Removed.IsZero() {
		t.Errorf("Heal: %v, healed %d, removed at %v", err, len(inj.healed), af.Rec.Removed)
	}

	kill, err := k.FaultSpec(ctx, FaultPlan{Kind: FaultPodKill, Role: "primary"}, "ns", "f2", picked)
	if err != nil || kill.Pods[0] != "vk-1" || kill.Grace == nil || *kill.Grace != 0 || kill.Namespace != "ns" {
		t.Fatalf("pod-kill spec = %+v, %v", kill, err)
	}
	af, err = Inject(ctx, inj, FaultPlan{Kind: FaultPodKill, Role: "primary"}, kill)
	if err != nil || af.Lasting {
		t.Fatalf("pod kill: %+v, %v", af, err)
	}
	if err := Heal(ctx, inj, af); err != nil || len(inj.healed) != 1 {
		t.Errorf("a pod kill is not healed: %v, healed %d", err, len(inj.healed))
	}

	part, err := k.FaultSpec(ctx, FaultPlan{Kind: FaultPartition, Role: "replica"}, "ns", "f3", picked)
	if err != nil {
		t.Fatal(err)
	}
	af, err = Inject(ctx, inj, FaultPlan{Kind: FaultPartition, Role: "replica"}, part)
	if err != nil || af.Rec.Unsupported == "" {
		t.Fatalf("an unsupported partition: %+v, %v; want it recorded as unsupported", af, err)
	}
	if err := Heal(ctx, inj, af); err != nil || len(inj.healed) != 1 {
		t.Errorf("an unsupported fault is not healed: %v, healed %d", err, len(inj.healed))
	}
}

func TestFaultPlanValidate(t *testing.T) {
	for _, tc := range []struct {
		p    FaultPlan
		want string
	}{
		{FaultPlan{Kind: FaultPodKill, Role: "primary"}, ""},
		{FaultPlan{Kind: FaultOperatorCrash, Role: RoleOperator}, ""},
		{FaultPlan{Kind: "meteor", Role: "pod"}, "unknown fault kind"},
		{FaultPlan{Kind: FaultPartition}, "names no role"},
		{FaultPlan{Kind: FaultOperatorCrash, Role: "primary"}, "operator kinds"},
		{FaultPlan{Kind: FaultPodKill, Role: RoleOperator}, "operator kinds"},
		{FaultPlan{Kind: FaultPartition, Role: "replica", Then: &FaultPlan{Kind: "x", Role: "pod"}}, "second fault"},
	} {
		err := tc.p.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: Validate = %v, want %q", tc.p, err, tc.want)
		}
	}
}
