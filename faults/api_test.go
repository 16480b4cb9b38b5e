package faults

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestAPIKillsPodsThroughTheAPI(t *testing.T) {
	cs := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}},
	)
	var graces []*int64
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		graces = append(graces, a.(k8stesting.DeleteActionImpl).DeleteOptions.GracePeriodSeconds)
		return false, nil, nil
	})
	inj := NewAPI(cs)
	if !Supports(inj, PodKill) || Supports(inj, ContainerCrash) {
		t.Fatalf("capabilities %v; want pod-kill only", inj.Capabilities())
	}
	zero := int64(0)
	if err := inj.Inject(context.Background(), Spec{Kind: PodKill, Name: "f1", Namespace: "ns", Pods: []string{"a"}, Grace: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := inj.Inject(context.Background(), Spec{Kind: PodKill, Name: "f2", Namespace: "ns", Pods: []string{"b"}}); err != nil {
		t.Fatal(err)
	}
	if len(graces) != 2 || graces[0] == nil || *graces[0] != 0 || graces[1] != nil {
		t.Fatalf("grace periods %v; want 0 (kill) then the pod's own (delete)", graces)
	}
	for _, p := range []string{"a", "b"} {
		if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), p, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s after the fault: %v; want it deleted", p, err)
		}
	}
	if err := inj.Inject(context.Background(), Spec{Kind: PodKill, Name: "f3", Namespace: "ns", Pods: []string{"gone"}}); err == nil {
		t.Error("killing a pod that does not exist succeeded; want an error")
	}
}

func TestAPIRefusesWhatNeedsAChaosTool(t *testing.T) {
	inj := NewAPI(fake.NewClientset())
	for _, k := range []Kind{ContainerCrash, PodFailure, Partition, APIServerPartition, Delay, Loss} {
		err := inj.Inject(context.Background(), Spec{Kind: k, Name: "f", Namespace: "ns", Pods: []string{"a"}, Peers: []string{"b"}})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Chaos Mesh") {
			t.Errorf("%s: %v; want ErrUnsupported naming Chaos Mesh", k, err)
		}
	}
}
