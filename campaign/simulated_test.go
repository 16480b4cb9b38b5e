package campaign

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/reports"
)

// TestSimulatedIn: containers whose status imageID is the embedded cluster's
// simulated marker are listed (init containers too); containers run as
// processes are not.
func TestSimulatedIn(t *testing.T) {
	pods := []corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vk-0"},
		Status: corev1.PodStatus{
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", ImageID: "gauntlet-simulated://busybox:1"}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "valkey", ImageID: "gauntlet-local:///usr/bin/valkey-server"},
				{Name: "exporter", ImageID: "gauntlet-simulated://oliver006/redis_exporter:v1"},
			},
		},
	}, {ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "op-1"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", ImageID: "gauntlet-local:///bin/op"}}}}}
	want := []reports.SimulatedContainer{
		{Namespace: "ns", Pod: "vk-0", Container: "init", Image: "busybox:1"},
		{Namespace: "ns", Pod: "vk-0", Container: "exporter", Image: "oliver006/redis_exporter:v1"},
	}
	if got := simulatedIn(pods); !reflect.DeepEqual(got, want) {
		t.Errorf("simulatedIn = %+v, want %+v", got, want)
	}
	sum := reports.Build(reports.BuildInput{SimulatedContainers: want})
	if !reflect.DeepEqual(sum.SimulatedContainers, want) {
		t.Errorf("summary lists %+v, want %+v", sum.SimulatedContainers, want)
	}
}
