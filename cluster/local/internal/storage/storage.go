// Package storage is the embedded cluster's dynamic volume provisioner: a default
// StorageClass whose claims become host folders under the cluster's state folder,
// exposed as hostPath PersistentVolumes (every node runs on this host, so a volume
// is reachable from any node and its data survives pod deletion and re-creation).
// The provisioner follows the protocol of Kubernetes' external provisioners
// (see provision.go) without using sig-storage-lib-external-provisioner: that
// library registers core/v1 in client-go's global scheme each time its
// controller is constructed, so in a process hosting several clusters one
// cluster's construction writes the scheme while another cluster's informers
// read it, and the process crashes (concurrent map read and map write).
//
// The class allows volume expansion, and the package's resizer plays the parts
// CSI's external-resizer and the kubelet's filesystem expansion play on a real
// cluster (see resize.go). A volume is a folder with no size of its own: its
// capacity, provisioned or grown, is bookkeeping that nothing enforces on the
// folder; only the cluster's total capacity bounds provisioning and growth.
package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ProvisionerName is the provisioner field of the default StorageClass.
const ProvisionerName = "gauntlet.dev/local-path"

// ClassName is the default StorageClass's name (as in kind).
const ClassName = "standard"

// ErrInsufficientCapacity is returned when a claim asks for more than the
// cluster's storage capacity has left (the invariant: provisioned ≤ capacity).
var ErrInsufficientCapacity = errors.New("storage: provisioned volumes may not exceed the cluster's storage capacity")

// Config describes the provisioner.
type Config struct {
	// Root is the folder holding one sub-folder per volume.
	Root string
	// Capacity bounds the sum of provisioned sizes, so "more storage than
	// available" stays a real failure; zero means unlimited.
	Capacity resource.Quantity
	// Log receives provisioning decisions.
	Log *slog.Logger
}

// EnsureClass creates the default StorageClass if it does not exist, with
// volume expansion allowed (the API server's PersistentVolumeClaimResize
// admission then accepts a claim's growth; shrinking stays refused by
// validation). A class of that name without expansion, left by an older
// Gauntlet, gets it.
func EnsureClass(ctx context.Context, client kubernetes.Interface) error {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := corev1.PersistentVolumeReclaimDelete
	expand := true
	sc := &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClassName,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          ProvisionerName,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &mode,
		AllowVolumeExpansion: &expand,
	}
	_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("storage: create StorageClass %s: %w", ClassName, err)
	}
	cur, err := client.StorageV1().StorageClasses().Get(ctx, ClassName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("storage: read StorageClass %s: %w", ClassName, err)
	}
	if cur.Provisioner != ProvisionerName || (cur.AllowVolumeExpansion != nil && *cur.AllowVolumeExpansion) {
		return nil
	}
	cur.AllowVolumeExpansion = &expand
	if _, err := client.StorageV1().StorageClasses().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("storage: allow volume expansion on StorageClass %s: %w", ClassName, err)
	}
	return nil
}

// Run provisions and resizes volumes until ctx is done; it returns nil then,
// or an error when the volume folder cannot be created.
func Run(ctx context.Context, client kubernetes.Interface, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	p := &provisioner{cfg: cfg, client: client}
	resized := make(chan struct{})
	go func() {
		defer close(resized)
		runResizer(ctx, client, cfg, p.owns)
	}()
	p.run(ctx)
	<-resized
	return nil
}

// owns reports whether path is a volume folder of this provisioner: a direct
// child of Root.
func (p *provisioner) owns(path string) bool {
	rel, err := filepath.Rel(p.cfg.Root, path)
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !strings.Contains(rel, "/")
}

// used sums the capacity of this provisioner's existing volumes.
func (p *provisioner) used(ctx context.Context) (resource.Quantity, error) {
	pvs, err := p.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("storage: list volumes: %w", err)
	}
	var sum resource.Quantity
	for _, pv := range pvs.Items {
		if pv.Spec.HostPath != nil && p.owns(pv.Spec.HostPath.Path) {
			sum.Add(pv.Spec.Capacity[corev1.ResourceStorage])
		}
	}
	return sum, nil
}
