package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
)

// TestE2EPendingPodReplacedAfterRollback: a spec that asks for more CPU than any
// node has leaves the pod the roll re-created Pending (Unschedulable); rolling the
// spec back must bring every pod back, Ready and linked. (An untuned Gauntlet
// campaign found the operator waiting forever for that Pending pod, built from
// the bad template, to serve: the OnDelete roll never deleted it, so the
// StatefulSet stayed at 2/3 Ready.)
func TestE2EPendingPodReplacedAfterRollback(t *testing.T) {
	cl, ns, _ := readyCache(t, "vk-pending")
	checkTopology(t, cl, ns, "cache")

	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) {
		s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}
	})
	var pending string
	err := poll(context.Background(), 2*time.Minute, func() (bool, error) {
		for _, p := range pods(t, cl, ns, "cache") {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					pending = p.Name
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		dumpState(t, cl, ns)
		t.Fatalf("no pod became Unschedulable after asking for 64 CPUs: %v", err)
	}
	t.Logf("%s is Pending (Unschedulable); rolling the spec back", pending)

	update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) { s.Resources.Requests = nil })
	waitReady(t, cl, ns, "cache", 3*time.Minute)
	checkTopology(t, cl, ns, "cache")
	// Every pod Ready and from the rolled-back template. Polled: on a loaded host
	// a readiness probe can time out once after the cluster reported Ready.
	var why string
	err = poll(context.Background(), time.Minute, func() (bool, error) {
		why = ""
		for _, p := range pods(t, cl, ns, "cache") {
			if !podReady(&p) {
				why = fmt.Sprintf("%s is not Ready after the rollback: phase %s", p.Name, p.Status.Phase)
				return false, nil
			}
			for _, c := range p.Spec.Containers {
				if cpu := c.Resources.Requests.Cpu(); c.Name == "valkey" && !cpu.IsZero() {
					why = fmt.Sprintf("%s still requests %s CPU after the rollback", p.Name, cpu)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		dumpState(t, cl, ns)
		t.Fatalf("%s (%v)", why, err)
	}
}

// TestE2ESecurityContextChanges declares security contexts an untuned Gauntlet
// campaign generated on a serving cluster with persistence, then rolls them back:
// the cluster must be Ready, every pod linked, after each.
func TestE2ESecurityContextChanges(t *testing.T) {
	f, tr := false, true
	always := corev1.FSGroupChangeAlways
	tests := []struct {
		name   string
		mutate func(*v1alpha1.ValkeyClusterSpec)
	}{
		{"podSecurityContext fsGroupChangePolicy Always", func(s *v1alpha1.ValkeyClusterSpec) {
			s.PodSecurityContext = &corev1.PodSecurityContext{FSGroupChangePolicy: &always}
		}},
		{"containerSecurityContext allowPrivilegeEscalation true", func(s *v1alpha1.ValkeyClusterSpec) {
			s.ContainerSecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &tr}
		}},
		// Valkey runs as root and writes its files; after the rollback user 999
		// must be able to open them again (the kubelet's fsGroup walk).
		{"containerSecurityContext root, privileged", func(s *v1alpha1.ValkeyClusterSpec) {
			root := int64(0)
			s.ContainerSecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &tr, Privileged: &tr,
				RunAsNonRoot: &f, RunAsUser: &root, ReadOnlyRootFilesystem: &f}
		}},
		{"containerSecurityContext restricted, writable root", func(s *v1alpha1.ValkeyClusterSpec) {
			s.ContainerSecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &f, RunAsNonRoot: &tr,
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
		}},
	}
	cl := setup(t)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns := namespace(t, cl, "vk-secctx-"+string(rune('a'+i)))
			create(t, cl, newCluster(ns, "cache", 3, func(s *v1alpha1.ValkeyClusterSpec) { s.Persistence.Enabled = true }))
			waitReady(t, cl, ns, "cache", 3*time.Minute)
			keys := writeKeys(t, checkTopology(t, cl, ns, "cache"), "sc", 20)
			update(t, cl, ns, "cache", tt.mutate)
			waitReadyOrDump(t, cl, ns, "cache", 3*time.Minute)
			checkKeys(t, checkTopology(t, cl, ns, "cache"), keys)
			update(t, cl, ns, "cache", func(s *v1alpha1.ValkeyClusterSpec) {
				s.PodSecurityContext, s.ContainerSecurityContext = nil, nil
			})
			waitReadyOrDump(t, cl, ns, "cache", 3*time.Minute)
			checkKeys(t, checkTopology(t, cl, ns, "cache"), keys)
		})
	}
}

// waitReadyOrDump is waitReady that logs the namespace's state when it fails.
func waitReadyOrDump(t *testing.T, cl client.Client, ns, name string, timeout time.Duration) {
	t.Helper()
	done := false
	t.Cleanup(func() {
		if !done {
			dumpState(t, cl, ns)
			dumpContainers(t, cl, ns, name)
		}
	})
	waitReady(t, cl, ns, name, timeout)
	done = true
}

// dumpContainers logs the container states of a cluster's pods.
func dumpContainers(t testing.TB, cl client.Client, ns, name string) {
	for _, p := range pods(t, cl, ns, name) {
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				t.Logf("pod %s condition %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			t.Logf("pod %s (%s) container %s: restarts %d state %+v last %+v", p.Name, p.Labels["controller-revision-hash"], cs.Name, cs.RestartCount, cs.State, cs.LastTerminationState)
		}
	}
}
