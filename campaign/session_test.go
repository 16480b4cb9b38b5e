package campaign

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// TestOperatorDown: an operator pod that is not ready is a readiness problem;
// one waiting in the crash back-off is replaced only once the campaign has
// faulted the operator in that cluster (the back-off is then the harness's
// doing), never otherwise.
func TestOperatorDown(t *testing.T) {
	pod := func(name, waiting string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "op", UID: types.UID("u-" + name), Labels: map[string]string{"app": "op"}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}}}}}}
	}
	for _, faulted := range []bool{false, true} {
		cs := fake.NewClientset(pod("op-a", "CrashLoopBackOff", corev1.ConditionFalse), pod("op-b", "", corev1.ConditionTrue))
		e := &env{kube: &kube{cs: cs, opNS: "op", opLabels: map[string]string{"app": "op"}}}
		e.operatorFaulted.Store(faulted)
		s := &session{r: &runner{cfg: Config{}.withDefaults()}, env: e}
		down := s.operatorDown(context.Background())
		if len(down) != 1 || !strings.Contains(down[0], "op/op-a") || !strings.Contains(down[0], "CrashLoopBackOff") {
			t.Fatalf("faulted %v: down = %v, want op-a in CrashLoopBackOff", faulted, down)
		}
		_, err := cs.CoreV1().Pods("op").Get(context.Background(), "op-a", metav1.GetOptions{})
		if replaced := err != nil; replaced != faulted {
			t.Errorf("faulted %v: pod replaced %v (%v)", faulted, replaced, err)
		}
		if faulted && !strings.Contains(down[0], "replaced") {
			t.Errorf("the replacement is not said: %q", down[0])
		}
	}
}

// TestDeclared: a desired state the API server refused is not judged as if it
// had been declared (seed 1: a refused flip of an immutable field was reported
// as "changed to true but no object of the state changed").
func TestDeclared(t *testing.T) {
	prev := map[string]any{"spec": map[string]any{"persistence": map[string]any{"enabled": false}}}
	d := map[string]any{"spec": map[string]any{"persistence": map[string]any{"enabled": true}}}
	st := &model.Step{Changed: []string{"spec.persistence.enabled"}}
	if gotSt, gotD := declared(st, d, d); gotSt != st || !jsonEqual(gotD, d) {
		t.Errorf("an accepted D is judged as declared: got %v %v", gotSt, gotD)
	}
	gotSt, gotD := declared(st, prev, d)
	if len(gotSt.Changed) != 0 || !jsonEqual(gotD, prev) {
		t.Errorf("a refused D: judged against %v with changes %v, want D(i-1) and none", gotD, gotSt.Changed)
	}
	if len(st.Changed) != 1 {
		t.Errorf("the recorded step lost its changes")
	}
}

// TestRetriedLater: a rollback the API server refuses (seed 4: a storage
// grow's rollback, which the CRD forbids as a shrink) is retried as a
// re-creation and not judged itself — it repeated the failed step's health
// findings and a "failed to roll back" no rollback had attempted. A refused
// apply, and a refused re-creation (nothing follows it), are judged.
//
// A refused re-creation is retried from the seed (CloudNativePG's webhook
// refused a field of D(i-1) on create, and the worker, left without a CR, had
// its next 72 desired states refused); the re-creation of the seed is judged.
func TestRetriedLater(t *testing.T) {
	seed := model.Object{"spec": map[string]any{"instances": int64(1)}}
	d := model.Object{"spec": map[string]any{"instances": int64(1), "projectedVolumeTemplate": map[string]any{"defaultMode": int64(2)}}}
	cases := []struct {
		name string
		in   stepInput
		seed model.Object
		want bool
	}{
		{"a refused rollback", stepInput{kind: model.StepRollback, desired: d}, seed, true},
		{"a refused re-creation of D(i-1)", stepInput{kind: model.StepRollback, recreate: true, desired: d}, seed, true},
		{"a refused re-creation of the seed", stepInput{kind: model.StepRollback, recreate: true, desired: seed}, seed, false},
		{"a refused re-creation, no seed known", stepInput{kind: model.StepRollback, recreate: true, desired: d}, nil, false},
		{"a refused apply", stepInput{kind: model.StepApply, desired: d}, seed, false},
		{"a refused recreate apply", stepInput{kind: model.StepApply, recreate: true, desired: d}, seed, false},
	}
	for _, c := range cases {
		if got := retriedLater(c.in, c.seed); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	refused := &StepRecord{Current: seed} // a refused step keeps the previous desired state
	if !fallBackToSeed(refused, d, seed) {
		t.Error("a refused re-creation of D(i-1) does not fall back to the seed")
	}
	if fallBackToSeed(&StepRecord{Current: d}, d, seed) {
		t.Error("an accepted re-creation falls back to the seed")
	}
	if fallBackToSeed(refused, seed, seed) || fallBackToSeed(refused, d, nil) {
		t.Error("falls back to the seed when it is what was refused, or unknown")
	}
}

// TestDanglingNamed: a desired state naming something the target declares
// unavailable (a CloudNativePG plugin none installed) is a misoperation with
// that reason; an available name is not.
func TestDanglingNamed(t *testing.T) {
	tg := &targets.Target{References: []targets.Reference{{Path: "spec.plugins[].name", Named: "CNPG-I plugin", Available: []string{"barman"}}}}
	s := &session{r: &runner{cfg: Config{}.withDefaults(), target: tg}, env: &env{}}
	d := model.Object{"spec": map[string]any{"plugins": []any{map[string]any{"name": "gauntlet-x6f8v", "enabled": true}}}}
	why := s.dangling(context.Background(), d)
	if !strings.Contains(why, `spec.plugins[0].name names the CNPG-I plugin "gauntlet-x6f8v", which the test cluster does not have`) {
		t.Errorf("dangling = %q", why)
	}
	d["spec"].(map[string]any)["plugins"] = []any{map[string]any{"name": "barman"}}
	if why := s.dangling(context.Background(), d); why != "" {
		t.Errorf("an available plugin is dangling: %q", why)
	}
}

// TestUnhealthy: a rollback whose system is left not converged or with health
// findings is re-created (CloudNativePG seed 2: a crash-looping instance the
// rollback never rolled was inherited by fifteen later steps); other findings
// (recovery, consistency) and warnings do not call for it.
func TestUnhealthy(t *testing.T) {
	rec := func(oracle string, sev model.Severity) *StepRecord {
		return &StepRecord{Findings: []model.Finding{{Oracle: oracle, Severity: sev}}}
	}
	for _, tc := range []struct {
		name string
		rec  *StepRecord
		want bool
	}{
		{"crash loop", rec("health", model.SeverityError), true},
		{"timeout", &StepRecord{Step: model.Step{TimedOut: true}}, true},
		{"stuck", rec("stuck", model.SeverityError), true},
		{"only a difference from S(i-1)", rec("recovery", model.SeverityError), false},
		{"a warning", rec("health", model.SeverityWarning), false},
		{"nothing", &StepRecord{}, false},
	} {
		if got := unhealthy(tc.rec); got != tc.want {
			t.Errorf("%s: unhealthy = %v, want %v", tc.name, got, tc.want)
		}
	}
}
