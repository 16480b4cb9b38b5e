package local

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestE2EVolumeExpansion grows a claim a running pod uses, as an operator
// does: the API server admits the growth (the class allows expansion), the
// volume and the claim end at the new size after the steps a real resize
// shows, the data stays, a shrink is refused, and a growth beyond the
// cluster's storage capacity fails until the request is lowered.
func TestE2EVolumeExpansion(t *testing.T) {
	c := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ns := namespace(t, c, "resize")
	pvcs := c.Client().CoreV1().PersistentVolumeClaims(ns)
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := pvcs.Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod(t, c, shellPod(ns, "user", "echo kept > /data/f && exec sleep 3600", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}))
	waitPod(t, c, ns, "user", 2*time.Minute, ready)

	// resize sets the request and follows every write to the claim until done
	// says the resize has got where it should; it returns the condition types
	// and allocated-resource statuses the claim passed through.
	resize := func(size string, done func(*corev1.PersistentVolumeClaim) bool) (*corev1.PersistentVolumeClaim, map[string]bool) {
		t.Helper()
		cur, err := pvcs.Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := pvcs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=data", ResourceVersion: cur.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		cur.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		if _, err := pvcs.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("grow the claim to %s: %v", size, err)
		}
		seen := map[string]bool{}
		for {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("grow to %s: the watch ended; seen %v", size, seen)
				}
				p, isPVC := ev.Object.(*corev1.PersistentVolumeClaim)
				if ev.Type != watch.Modified || !isPVC {
					continue
				}
				for _, cond := range p.Status.Conditions {
					seen[string(cond.Type)] = true
				}
				for _, s := range p.Status.AllocatedResourceStatuses {
					seen[string(s)] = true
				}
				if done(p) {
					return p, seen
				}
			case <-ctx.Done():
				t.Fatalf("grow to %s: not done; seen %v", size, seen)
			}
		}
	}
	capacity := func(p *corev1.PersistentVolumeClaim) string {
		q := p.Status.Capacity[corev1.ResourceStorage]
		return q.String()
	}
	volume := func(name string) string {
		pv, err := c.Client().CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := pv.Spec.Capacity[corev1.ResourceStorage]
		return q.String()
	}

	got, seen := resize("2Gi", func(p *corev1.PersistentVolumeClaim) bool { return capacity(p) == "2Gi" })
	for _, want := range []string{"Resizing", "ControllerResizeInProgress", "FileSystemResizePending", "NodeResizePending", "NodeResizeInProgress"} {
		if !seen[want] {
			t.Errorf("the claim never showed %s on its way to 2Gi (seen %v)", want, seen)
		}
	}
	if v := volume(got.Spec.VolumeName); v != "2Gi" {
		t.Errorf("volume capacity %s, want 2Gi", v)
	}
	if a := got.Status.AllocatedResources[corev1.ResourceStorage]; a.String() != "2Gi" || got.Status.AllocatedResourceStatuses != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("claim status after the resize: %+v", got.Status)
	}
	if out, _, err := execPod(c, ns, "user", "main", "cat", "/data/f"); err != nil || strings.TrimSpace(out) != "kept" {
		t.Errorf("data after the resize: %q, %v", out, err)
	}
	reasons := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		evs, err := c.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=PersistentVolumeClaim"})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			reasons[e.Reason] = true
		}
		if reasons["Resizing"] && reasons["FileSystemResizeRequired"] && reasons["FileSystemResizeSuccessful"] {
			break
		}
	}
	if !reasons["Resizing"] || !reasons["FileSystemResizeRequired"] || !reasons["FileSystemResizeSuccessful"] {
		t.Errorf("claim events %v, want Resizing, FileSystemResizeRequired and FileSystemResizeSuccessful", reasons)
	}

	// Shrinking is refused by the API server, as on any cluster.
	cur, err := pvcs.Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1Gi")
	if _, err := pvcs.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.capacity") {
		t.Errorf("shrink to 1Gi: err = %v, want the API server's refusal (less than status.capacity)", err)
	}

	// Beyond the cluster's storage capacity (100Gi): an infeasible resize,
	// from which lowering the request (still above status.capacity) recovers.
	got, _ = resize("200Gi", func(p *corev1.PersistentVolumeClaim) bool {
		return p.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimControllerResizeInfeasible
	})
	if capacity(got) != "2Gi" || volume(got.Spec.VolumeName) != "2Gi" {
		t.Errorf("after an infeasible growth: claim %s, volume %s; want both 2Gi", capacity(got), volume(got.Spec.VolumeName))
	}
	var failed bool
	for _, cond := range got.Status.Conditions {
		failed = failed || (cond.Type == corev1.PersistentVolumeClaimControllerResizeError && strings.Contains(cond.Message, "storage capacity"))
	}
	if !failed {
		t.Errorf("no ControllerResizeError condition naming the capacity: %+v", got.Status.Conditions)
	}
	got, _ = resize("3Gi", func(p *corev1.PersistentVolumeClaim) bool { return capacity(p) == "3Gi" })
	if v := volume(got.Spec.VolumeName); v != "3Gi" || len(got.Status.Conditions) != 0 {
		t.Errorf("after lowering the request to 3Gi: volume %s, conditions %+v", v, got.Status.Conditions)
	}
}
