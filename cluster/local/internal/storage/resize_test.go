package storage

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const testRoot = "/volumes"

// bound is a claim of size bound to a volume of the same size, as provisioned.
func bound(size string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	q := resource.MustParse(size)
	pvc := claim(size)
	pvc.UID = "uid-data"
	pvc.Spec.VolumeName = "pv-data"
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: q},
		Conditions: []corev1.PersistentVolumeClaimCondition{{Type: "Other", Status: corev1.ConditionTrue}}}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-data"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: q},
			ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "uid-data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(testRoot, "pv-data")}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	return pvc, pv
}

func user(node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db-0", UID: "uid-pod"},
		Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func request(pvc *corev1.PersistentVolumeClaim, size string) {
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
}

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// walk applies decide's steps until it has nothing to do (at most 10), and
// returns their kinds.
func walk(t *testing.T, v *claimView) []string {
	t.Helper()
	var kinds []string
	for range 10 {
		s := decide(*v)
		if s.Kind == stepNone {
			return kinds
		}
		kinds = append(kinds, s.Kind.String())
		if pv := applyVolume(s, v.PV); pv != nil {
			if v.Free != nil {
				grown := pv.Spec.Capacity[corev1.ResourceStorage]
				grown.Sub(v.PV.Spec.Capacity[corev1.ResourceStorage])
				v.Free.Sub(grown)
			}
			v.PV = pv
		}
		if pvc := applyClaim(s, v.PVC, metav1.Now()); pvc != nil {
			v.PVC = pvc
		}
	}
	t.Fatalf("no end after 10 steps: %v", kinds)
	return nil
}

func storageOf(l corev1.ResourceList) string {
	q, ok := l[corev1.ResourceStorage]
	if !ok {
		return "<none>"
	}
	return q.String()
}

func conditionTypes(pvc *corev1.PersistentVolumeClaim) string {
	var out []string
	for _, c := range pvc.Status.Conditions {
		out = append(out, string(c.Type))
	}
	return strings.Join(out, ",")
}

// TestResizeWalk follows a claim's growth through every step, as the
// external-resizer and the kubelet take them, and checks where it ends.
func TestResizeWalk(t *testing.T) {
	tests := []struct {
		name    string
		size    string // the grown request
		user    *corev1.Pod
		free    *resource.Quantity
		steps   string
		pv, cap string // the volume's and the claim's capacity at the end
		alloc   string
		status  corev1.ClaimResourceStatus
		conds   string
	}{
		{name: "online: a pod on a node uses the claim", size: "2Gi", user: user("node-1"), free: qty("10Gi"),
			steps: "start expand node-pending node-in-progress node-finish", pv: "2Gi", cap: "2Gi", alloc: "2Gi", conds: "Other"},
		{name: "unlimited capacity", size: "5Gi", user: user("node-1"),
			steps: "start expand node-pending node-in-progress node-finish", pv: "5Gi", cap: "5Gi", alloc: "5Gi", conds: "Other"},
		{name: "no pod: waits for the node", size: "2Gi", free: qty("10Gi"),
			steps: "start expand node-pending", pv: "2Gi", cap: "1Gi", alloc: "2Gi", status: corev1.PersistentVolumeClaimNodeResizePending, conds: "Other,FileSystemResizePending"},
		{name: "beyond the cluster's capacity", size: "20Gi", user: user("node-1"), free: qty("10Gi"),
			steps: "start infeasible", pv: "1Gi", cap: "1Gi", alloc: "20Gi", status: corev1.PersistentVolumeClaimControllerResizeInfeasible, conds: "Other,Resizing,ControllerResizeError"},
		{name: "exactly the free capacity", size: "11Gi", user: user("node-1"), free: qty("10Gi"),
			steps: "start expand node-pending node-in-progress node-finish", pv: "11Gi", cap: "11Gi", alloc: "11Gi", conds: "Other"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pvc, pv := bound("1Gi")
			request(pvc, tc.size)
			v := &claimView{PVC: pvc, PV: pv, User: tc.user, Free: tc.free}
			if got := strings.Join(walk(t, v), " "); got != tc.steps {
				t.Errorf("steps %q, want %q", got, tc.steps)
			}
			st := v.PVC.Status
			if got := storageOf(v.PV.Spec.Capacity); got != tc.pv {
				t.Errorf("volume capacity %s, want %s", got, tc.pv)
			}
			if got := storageOf(st.Capacity); got != tc.cap {
				t.Errorf("claim capacity %s, want %s", got, tc.cap)
			}
			if got := storageOf(st.AllocatedResources); got != tc.alloc {
				t.Errorf("allocatedResources %s, want %s", got, tc.alloc)
			}
			if got := st.AllocatedResourceStatuses[corev1.ResourceStorage]; got != tc.status {
				t.Errorf("allocatedResourceStatuses %q, want %q", got, tc.status)
			}
			if tc.status == "" && st.AllocatedResourceStatuses != nil {
				t.Errorf("allocatedResourceStatuses %v, want nil", st.AllocatedResourceStatuses)
			}
			if got := conditionTypes(v.PVC); got != tc.conds {
				t.Errorf("conditions %s, want %s", got, tc.conds)
			}
		})
	}
}

// TestResizeResumes checks the walks that continue from a stopped one: a pod
// arriving for a pending node expansion, capacity freed after an infeasible
// growth, a request lowered to recover from it, and a growth requested while
// the node's part of the previous one is pending.
func TestResizeResumes(t *testing.T) {
	t.Run("a pod starts", func(t *testing.T) {
		pvc, pv := bound("1Gi")
		request(pvc, "2Gi")
		v := &claimView{PVC: pvc, PV: pv}
		walk(t, v)
		v.User = user("node-1")
		if got := strings.Join(walk(t, v), " "); got != "node-in-progress node-finish" {
			t.Fatalf("steps %q", got)
		}
		if got := storageOf(v.PVC.Status.Capacity); got != "2Gi" {
			t.Fatalf("capacity %s", got)
		}
	})
	t.Run("capacity frees up", func(t *testing.T) {
		pvc, pv := bound("1Gi")
		request(pvc, "20Gi")
		v := &claimView{PVC: pvc, PV: pv, User: user("node-1"), Free: qty("10Gi")}
		walk(t, v)
		if s := decide(*v); s.Kind != stepNone {
			t.Fatalf("an infeasible growth retried with no capacity freed: %v", s.Kind)
		}
		v.Free = qty("30Gi")
		if got := strings.Join(walk(t, v), " "); got != "start expand node-pending node-in-progress node-finish" {
			t.Fatalf("steps %q", got)
		}
		if got := conditionTypes(v.PVC); got != "Other" {
			t.Fatalf("conditions %s: the error should be gone", got)
		}
	})
	t.Run("the request is lowered", func(t *testing.T) {
		pvc, pv := bound("1Gi")
		request(pvc, "20Gi")
		v := &claimView{PVC: pvc, PV: pv, User: user("node-1"), Free: qty("10Gi")}
		walk(t, v)
		v.PVC = v.PVC.DeepCopy()
		request(v.PVC, "3Gi")
		if got := strings.Join(walk(t, v), " "); got != "start expand node-pending node-in-progress node-finish" {
			t.Fatalf("steps %q", got)
		}
		if got := storageOf(v.PVC.Status.Capacity); got != "3Gi" {
			t.Fatalf("capacity %s", got)
		}
	})
	t.Run("a newer growth waits for the node", func(t *testing.T) {
		pvc, pv := bound("1Gi")
		request(pvc, "2Gi")
		v := &claimView{PVC: pvc, PV: pv}
		walk(t, v)
		v.PVC = v.PVC.DeepCopy()
		request(v.PVC, "3Gi")
		if s := decide(*v); s.Kind != stepNone {
			t.Fatalf("a newer growth started before the node finished the previous one: %v", s.Kind)
		}
		v.User = user("node-1")
		if got := strings.Join(walk(t, v), " "); got != "node-in-progress node-finish start expand node-pending node-in-progress node-finish" {
			t.Fatalf("steps %q", got)
		}
		if got := storageOf(v.PVC.Status.Capacity); got != "3Gi" {
			t.Fatalf("capacity %s", got)
		}
	})
}

// TestDecideLeavesAlone lists claims the resizer must not touch.
func TestDecideLeavesAlone(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume)
	}{
		{"nothing asked", func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {}},
		{"not bound", func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			request(c, "2Gi")
			c.Status.Phase = corev1.ClaimPending
		}},
		{"volume bound to another claim", func(c *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) {
			request(c, "2Gi")
			v.Spec.ClaimRef.UID = "other"
		}},
		{"claim being deleted", func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) {
			request(c, "2Gi")
			c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pvc, pv := bound("1Gi")
			tc.mutate(pvc, pv)
			if s := decide(claimView{PVC: pvc, PV: pv, User: user("node-1")}); s.Kind != stepNone {
				t.Fatalf("step %v, want none", s.Kind)
			}
		})
	}
	pvc, _ := bound("1Gi")
	request(pvc, "2Gi")
	if s := decide(claimView{PVC: pvc}); s.Kind != stepNone {
		t.Fatalf("no volume: step %v, want none", s.Kind)
	}
}

func TestMergeResizeConditions(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	old := []corev1.PersistentVolumeClaimCondition{
		{Type: "Other", Status: corev1.ConditionTrue, LastTransitionTime: then},
		{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: then},
	}
	got := mergeResizeConditions(old, false, corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: now})
	if len(got) != 2 || !got[1].LastTransitionTime.Equal(&then) {
		t.Errorf("an unchanged condition lost its transition time: %+v", got)
	}
	got = mergeResizeConditions(old, false, corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue})
	if len(got) != 2 || got[0].Type != "Other" || got[1].Type != corev1.PersistentVolumeClaimFileSystemResizePending {
		t.Errorf("replace Resizing: %+v", got)
	}
	if got = mergeResizeConditions(old, false); len(got) != 1 || got[0].Type != "Other" {
		t.Errorf("clear: %+v", got)
	}
}

func TestUsesClaim(t *testing.T) {
	pvc, _ := bound("1Gi")
	eph := user("node-1")
	eph.Name = "web"
	eph.Spec.Volumes = []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}}}
	ephClaim := pvc.DeepCopy()
	ephClaim.Name = "web-cache"
	done := user("node-1")
	done.Status.Phase = corev1.PodSucceeded
	other := user("node-1")
	other.Namespace = "elsewhere"
	tests := []struct {
		name string
		pod  *corev1.Pod
		pvc  *corev1.PersistentVolumeClaim
		want bool
	}{
		{"running on a node", user("node-1"), pvc, true},
		{"not placed", user(""), pvc, false},
		{"finished", done, pvc, false},
		{"another namespace", other, pvc, false},
		{"generic ephemeral volume", eph, ephClaim, true},
		{"another claim", eph, pvc, false},
	}
	for _, tc := range tests {
		if got := usesClaim(tc.pod, tc.pvc); got != tc.want {
			t.Errorf("%s: usesClaim = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEnsureClassAllowsExpansion(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if err := EnsureClass(ctx, client); err != nil {
		t.Fatal(err)
	}
	sc, err := client.StorageV1().StorageClasses().Get(ctx, ClassName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Fatal("new class: allowVolumeExpansion not true")
	}
	// A class an older Gauntlet made, without expansion, gets it.
	sc.AllowVolumeExpansion = nil
	if _, err := client.StorageV1().StorageClasses().Update(ctx, sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureClass(ctx, client); err != nil {
		t.Fatal(err)
	}
	sc, _ = client.StorageV1().StorageClasses().Get(ctx, ClassName, metav1.GetOptions{})
	if sc.AllowVolumeExpansion == nil || !*sc.AllowVolumeExpansion {
		t.Fatal("existing class: allowVolumeExpansion not set")
	}
}

// TestResizerGrowsClaim runs the resizer's loop against a fake API: a grown
// request ends with the volume and the claim at the new size, and an event
// for each step the real components record.
func TestResizerGrowsClaim(t *testing.T) {
	pvc, pv := bound("1Gi")
	pvc.Status.Conditions = nil
	client := fake.NewClientset(pvc, pv, user("node-1"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		owns := (&provisioner{cfg: Config{Root: testRoot}}).owns
		runResizer(ctx, client, Config{Capacity: resource.MustParse("10Gi"), Log: slog.New(slog.DiscardHandler)}, owns)
	}()
	defer func() { cancel(); <-done }()

	grown := pvc.DeepCopy()
	request(grown, "2Gi")
	if _, err := client.CoreV1().PersistentVolumeClaims("ns").Update(ctx, grown, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.PersistentVolumeClaim
	for {
		var err error
		got, err = client.CoreV1().PersistentVolumeClaims("ns").Get(ctx, "data", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if storageOf(got.Status.Capacity) == "2Gi" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("claim never grew: status %+v", got.Status)
		case <-time.After(20 * time.Millisecond):
		}
	}
	vol, err := client.CoreV1().PersistentVolumes().Get(ctx, "pv-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := storageOf(vol.Spec.Capacity); c != "2Gi" {
		t.Errorf("volume capacity %s, want 2Gi", c)
	}
	if a := storageOf(got.Status.AllocatedResources); a != "2Gi" || got.Status.AllocatedResourceStatuses != nil || len(got.Status.Conditions) != 0 {
		t.Errorf("claim status after the resize: %+v", got.Status)
	}
	want := map[string]bool{"Resizing": false, "FileSystemResizeRequired": false, "FileSystemResizeSuccessful": false}
	for !want["Resizing"] || !want["FileSystemResizeRequired"] || !want["FileSystemResizeSuccessful"] {
		evs, err := client.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if _, ok := want[e.Reason]; ok && e.InvolvedObject.Kind == "PersistentVolumeClaim" {
				want[e.Reason] = true
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("events seen: %v", want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
