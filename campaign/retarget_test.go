package campaign

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRetargetFaultWithoutPods(t *testing.T) {
	ctx := context.Background()
	r := &runner{cfg: Config{}.withDefaults(), faultKinds: slices.Clone(DefaultFaultKinds)}
	empty := &session{r: r, ns: "t1", env: &env{kube: &kube{cs: fake.NewClientset()}}}
	q, why := empty.retarget(ctx, FaultPlan{Kind: FaultPartition, Role: "pod", Pick: 7, Hold: 9 * time.Second, Persistent: true})
	if why == "" || q.Kind != FaultOperatorPartition || q.Role != "operator" || q.Hold != 9*time.Second || !q.Persistent {
		t.Errorf("partition without pods: %+v (%q), want operator-partition held as long", q, why)
	}
	q, why = empty.retarget(ctx, FaultPlan{Kind: FaultPodKill, Role: "pod", Pick: 1700})
	if why == "" || q.Kind != FaultOperatorCrash || q.Delay != 200*time.Millisecond {
		t.Errorf("pod-kill without pods: %+v (%q), want operator-crash, its delay from Pick", q, why)
	}
	if _, why := empty.retarget(ctx, FaultPlan{Kind: FaultOperatorCrash, Role: "operator"}); why != "" {
		t.Errorf("an operator fault was retargeted: %q", why)
	}
	withPod := &session{r: r, ns: "t1", env: &env{kube: &kube{cs: fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t1", Name: "db-0"}})}}}
	if _, why := withPod.retarget(ctx, FaultPlan{Kind: FaultPartition, Role: "pod"}); why != "" {
		t.Errorf("a namespace with a pod: retargeted (%q)", why)
	}
	noOp := &session{r: &runner{faultKinds: []string{FaultPartition, FaultPodKill}}, ns: "t1", env: &env{kube: &kube{cs: fake.NewClientset()}}}
	if _, why := noOp.retarget(ctx, FaultPlan{Kind: FaultPartition, Role: "pod"}); why != "" {
		t.Errorf("operator faults not drawn: retargeted (%q)", why)
	}
}
