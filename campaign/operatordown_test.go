package campaign

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
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
