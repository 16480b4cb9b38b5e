package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func claim(size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

// TestProvisionCapacity checks the invariant provisioned ≤ capacity: a claim
// beyond what is free gets no volume and a ProvisioningFailed event naming
// the capacity, and a claim that fits still gets one.
func TestProvisionCapacity(t *testing.T) {
	fx := newFixture(t, "10Gi", pending("a", "6Gi"), pending("b", "5Gi"), pending("c", "4Gi"))
	if err := fx.sync(t, "a"); err != nil {
		t.Fatalf("provision a (6Gi of 10Gi): %v", err)
	}
	fx.drain()
	err := fx.sync(t, "b")
	if !errors.Is(err, ErrInsufficientCapacity) || !strings.Contains(err.Error(), "only 4Gi of 10Gi is free") {
		t.Fatalf("provision b (5Gi, 4Gi free): err = %v, want ErrInsufficientCapacity with the free space", err)
	}
	if fx.volume(t, "b") != nil {
		t.Error("b got a volume beyond the capacity")
	}
	if _, err := os.Stat(filepath.Join(fx.root, "pvc-uid-b")); !os.IsNotExist(err) {
		t.Errorf("b's folder was created: %v", err)
	}
	evs := fx.drain()
	if len(evs) != 2 || !strings.HasPrefix(evs[1], "Warning ProvisioningFailed "+ErrInsufficientCapacity.Error()) {
		t.Errorf("events for b: %q, want Provisioning then ProvisioningFailed with the capacity error", evs)
	}
	if err := fx.sync(t, "c"); err != nil {
		t.Fatalf("provision c (4Gi, 4Gi free): %v", err)
	}
	if fx.volume(t, "c") == nil {
		t.Error("c got no volume")
	}
}
