// Package storage is the embedded cluster's dynamic volume provisioner: a default
// StorageClass whose claims become host folders under the cluster's state folder,
// exposed as hostPath PersistentVolumes (every node runs on this host, so a volume
// is reachable from any node and its data survives pod deletion and re-creation).
// The provisioning protocol itself is sig-storage-lib-external-provisioner's.
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
	"sigs.k8s.io/sig-storage-lib-external-provisioner/v13/controller"
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

type provisioner struct {
	cfg    Config
	client kubernetes.Interface
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

// Run provisions and resizes volumes until ctx is done.
func Run(ctx context.Context, client kubernetes.Interface, cfg Config) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Root, 0o755); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	p := &provisioner{cfg: cfg, client: client}
	pc := controller.NewProvisionController(ctx, client, ProvisionerName, p,
		controller.LeaderElection(false),
		controller.Threadiness(2),
		controller.FailedProvisionThreshold(0),
	)
	resized := make(chan struct{})
	go func() {
		defer close(resized)
		runResizer(ctx, client, cfg, p.owns)
	}()
	pc.Run(ctx)
	<-resized
	return nil
}

// Provision creates the volume's folder and its hostPath PersistentVolume.
func (p *provisioner) Provision(ctx context.Context, opts controller.ProvisionOptions) (*corev1.PersistentVolume, controller.ProvisioningState, error) {
	req := opts.PVC.Spec.Resources.Requests[corev1.ResourceStorage]
	if !p.cfg.Capacity.IsZero() {
		used, err := p.used(ctx)
		if err != nil {
			return nil, controller.ProvisioningInBackground, err
		}
		free := p.cfg.Capacity.DeepCopy()
		free.Sub(used)
		if req.Cmp(free) > 0 {
			return nil, controller.ProvisioningFinished, fmt.Errorf("%w: claim %s/%s requests %s but only %s of %s is free; request less or raise the cluster's storage capacity",
				ErrInsufficientCapacity, opts.PVC.Namespace, opts.PVC.Name, req.String(), free.String(), p.cfg.Capacity.String())
		}
	}
	dir := filepath.Join(p.cfg.Root, opts.PVName)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	// Any user may write, as with most local-path provisioners; fsGroup narrows it per pod.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, controller.ProvisioningFinished, fmt.Errorf("storage: chmod %s: %w", dir, err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if opts.StorageClass != nil && opts.StorageClass.ReclaimPolicy != nil {
		reclaim = *opts.StorageClass.ReclaimPolicy
	}
	typ := corev1.HostPathDirectoryOrCreate
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: opts.PVName},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			AccessModes:                   opts.PVC.Spec.AccessModes,
			VolumeMode:                    opts.PVC.Spec.VolumeMode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: req},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &typ},
			},
		},
	}
	p.cfg.Log.Info("provisioned volume", "pv", opts.PVName, "claim", opts.PVC.Namespace+"/"+opts.PVC.Name, "size", req.String())
	return pv, controller.ProvisioningFinished, nil
}

// Delete removes the volume's folder.
func (p *provisioner) Delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.HostPath == nil || !p.owns(pv.Spec.HostPath.Path) {
		return &controller.IgnoredError{Reason: "not a volume of this provisioner"}
	}
	if err := os.RemoveAll(pv.Spec.HostPath.Path); err != nil {
		return fmt.Errorf("storage: delete %s: %w", pv.Spec.HostPath.Path, err)
	}
	p.cfg.Log.Info("deleted volume", "pv", pv.Name)
	return nil
}

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
