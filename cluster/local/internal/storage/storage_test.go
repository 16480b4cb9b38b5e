package storage

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
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

func TestProvisionCapacityAndDelete(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	p := &provisioner{cfg: Config{Root: t.TempDir(), Capacity: resource.MustParse("10Gi"), Log: slog.New(slog.DiscardHandler)}, client: client}

	pv, state, err := p.Provision(ctx, controller.ProvisionOptions{PVName: "pv-a", PVC: claim("6Gi")})
	if err != nil || state != controller.ProvisioningFinished {
		t.Fatalf("provision: %v %v", state, err)
	}
	if _, err := os.Stat(pv.Spec.HostPath.Path); err != nil {
		t.Fatalf("volume folder: %v", err)
	}
	if _, err := client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		size    string
		wantErr error
	}{
		{"5Gi", ErrInsufficientCapacity},
		{"4Gi", nil},
	}
	for _, tc := range tests {
		_, _, err := p.Provision(ctx, controller.ProvisionOptions{PVName: "pv-" + tc.size, PVC: claim(tc.size)})
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("provision %s: err = %v, want %v", tc.size, err, tc.wantErr)
		}
	}
	if err := p.Delete(ctx, pv); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pv.Spec.HostPath.Path); !os.IsNotExist(err) {
		t.Fatalf("folder still there after Delete: %v", err)
	}
	foreign := pv.DeepCopy()
	foreign.Spec.HostPath.Path = "/etc"
	var ignored *controller.IgnoredError
	if err := p.Delete(ctx, foreign); !errors.As(err, &ignored) {
		t.Fatalf("deleting a foreign volume: err = %v, want IgnoredError", err)
	}
}
