package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// The provisioner plays an external provisioner's part on a real cluster
// (what sig-storage-lib-external-provisioner does for most of them):
//
//   - kube-controller-manager's volume binder marks a claim of the class with
//     volume.kubernetes.io/storage-provisioner (for a WaitForFirstConsumer
//     class, once the scheduler has picked a node and recorded it as
//     volume.kubernetes.io/selected-node);
//   - the provisioner then creates the volume folder and a PersistentVolume
//     named pvc-<claim UID>, annotated pv.kubernetes.io/provisioned-by and with
//     a claimRef to the claim, which the binder binds at once (events
//     Provisioning, then ProvisioningSucceeded or ProvisioningFailed on the
//     claim);
//   - when the claim is gone, the binder marks the volume Released; for
//     reclaim policy Delete the provisioner removes the folder and the
//     PersistentVolume.
//
// Failures, a claim beyond the cluster's storage capacity included, are
// retried with exponential backoff.

// Annotations of the provisioning protocol.
const (
	// annStorageProvisioner names the provisioner the volume binder expects to
	// provision a claim.
	annStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	// annBetaStorageProvisioner is annStorageProvisioner's older name.
	annBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	// annSelectedNode is the scheduler's node for a claim of a
	// WaitForFirstConsumer class.
	annSelectedNode = "volume.kubernetes.io/selected-node"
	// annProvisionedBy names the provisioner of a PersistentVolume.
	annProvisionedBy = "pv.kubernetes.io/provisioned-by"
	// annBetaStorageClass is a claim's class before spec.storageClassName.
	annBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
)

const (
	// provisionWorkers is how many claims and volumes are handled at once.
	provisionWorkers = 2
	// retryBase and retryMax bound the exponential backoff of failed work.
	retryBase = 500 * time.Millisecond
	retryMax  = time.Minute
)

// workKind says what a workItem names.
type workKind int

const (
	// workClaim is a claim that may need a volume.
	workClaim workKind = iota
	// workVolume is a volume that may need deleting.
	workVolume
)

// workItem is the provisioner's unit of work.
type workItem struct {
	Kind      workKind
	Namespace string
	Name      string
}

// provisioner creates volumes for the claims of the default class and deletes
// them once released.
type provisioner struct {
	cfg    Config
	client kubernetes.Interface
	// mu makes checking the free capacity and creating a volume one step, so
	// two workers cannot both take the last free space.
	mu      sync.Mutex
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	queue   workqueue.TypedRateLimitingInterface[workItem]
	events  record.EventRecorder
}

// run provisions and deletes volumes until ctx is done.
func (p *provisioner) run(ctx context.Context) {
	f := informers.NewSharedInformerFactory(p.client, 0)
	eb := record.NewBroadcaster(record.WithContext(ctx))
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: p.client.CoreV1().Events("")})
	defer eb.Shutdown()
	// client-go's scheme is only read here, to refer to the events' objects.
	synced := p.setup(f, eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: ProvisionerName}))
	defer p.queue.ShutDown()
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return
	}
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range provisionWorkers {
		wg.Go(func() {
			for p.next(ctx) {
			}
		})
	}
	wg.Wait()
}

// setup takes the provisioner's listers from f, queues work on their changes
// and records events with rec; it returns the informers' HasSynced. Start f
// afterwards.
func (p *provisioner) setup(f informers.SharedInformerFactory, rec record.EventRecorder) []cache.InformerSynced {
	pvcInf, pvInf, scInf := f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(), f.Storage().V1().StorageClasses()
	p.claims, p.volumes, p.classes = pvcInf.Lister(), pvInf.Lister(), scInf.Lister()
	p.events = rec
	p.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[workItem](retryBase, retryMax),
		workqueue.TypedRateLimitingQueueConfig[workItem]{})
	_, _ = pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.claimChanged,
		UpdateFunc: func(_, obj any) { p.claimChanged(obj) },
		DeleteFunc: p.claimDeleted,
	})
	_, _ = pvInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.volumeChanged,
		UpdateFunc: func(_, obj any) { p.volumeChanged(obj) },
		DeleteFunc: p.volumeDeleted,
	})
	return []cache.InformerSynced{pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced, scInf.Informer().HasSynced}
}

// claimChanged queues a claim that may be waiting for this provisioner.
func (p *provisioner) claimChanged(obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if ok && pvc.Spec.VolumeName == "" && pvc.DeletionTimestamp == nil && provisionerOf(pvc) == ProvisionerName {
		p.queue.Add(workItem{Kind: workClaim, Namespace: pvc.Namespace, Name: pvc.Name})
	}
}

// claimDeleted queues the volumes a deleted claim may leave behind.
func (p *provisioner) claimDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return
	}
	p.queue.Add(workItem{Kind: workVolume, Name: volumeNameFor(pvc)})
	if pvc.Spec.VolumeName != "" {
		p.queue.Add(workItem{Kind: workVolume, Name: pvc.Spec.VolumeName})
	}
}

// volumeChanged queues a volume of this provisioner.
func (p *provisioner) volumeChanged(obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Annotations[annProvisionedBy] == ProvisionerName {
		p.queue.Add(workItem{Kind: workVolume, Name: pv.Name})
	}
}

// volumeDeleted queues the claims still waiting for a volume when one of this
// provisioner's volumes goes: they may fit in the capacity it frees.
func (p *provisioner) volumeDeleted(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Annotations[annProvisionedBy] != ProvisionerName || p.cfg.Capacity.IsZero() {
		return
	}
	pvcs, err := p.claims.List(labels.Everything())
	if err != nil {
		return
	}
	for _, pvc := range pvcs {
		p.claimChanged(pvc)
	}
}

// next handles one work item; it returns false once the queue is shut down.
func (p *provisioner) next(ctx context.Context) bool {
	it, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(it)
	var err error
	switch it.Kind {
	case workClaim:
		err = p.syncClaim(ctx, it.Namespace, it.Name)
	case workVolume:
		err = p.syncVolume(ctx, it.Name)
	}
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Log.Info("volume provisioning step failed; retrying", "err", err)
		}
		p.queue.AddRateLimited(it)
		return true
	}
	p.queue.Forget(it)
	return true
}

// syncClaim provisions a volume for the claim if it waits for one from this
// provisioner.
func (p *provisioner) syncClaim(ctx context.Context, namespace, name string) error {
	pvc, err := p.claims.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: read claim %s/%s: %w", namespace, name, err)
	}
	class, err := p.classToProvision(pvc)
	if err != nil || class == nil {
		return err
	}
	return p.provision(ctx, pvc, class)
}

// classToProvision returns the claim's StorageClass when this provisioner
// should provision the claim now, and nil when not.
func (p *provisioner) classToProvision(pvc *corev1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	if pvc.Spec.VolumeName != "" || pvc.DeletionTimestamp != nil || provisionerOf(pvc) != ProvisionerName {
		return nil, nil
	}
	name := classOf(pvc)
	if name == "" {
		return nil, nil
	}
	class, err := p.classes.Get(name)
	if err != nil {
		// Retried: the class may be created after the claim.
		return nil, fmt.Errorf("storage: StorageClass %q of claim %s/%s: %w", name, pvc.Namespace, pvc.Name, err)
	}
	if class.Provisioner != ProvisionerName {
		return nil, nil
	}
	if class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer &&
		pvc.Annotations[annSelectedNode] == "" {
		return nil, nil // until the scheduler picks a node
	}
	return class, nil
}

// provision creates the claim's volume, unless it exists.
func (p *provisioner) provision(ctx context.Context, pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	name := volumeNameFor(pvc)
	if _, err := p.volumes.Get(name); err == nil {
		return nil
	}
	if pvc.Spec.VolumeMode != nil && *pvc.Spec.VolumeMode == corev1.PersistentVolumeBlock {
		// Not retried: the claim cannot change its volume mode.
		p.events.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", ProvisionerName+" does not support block volume provisioning")
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The cache may not yet hold a volume created by an earlier pass.
	if _, err := p.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{}); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return fmt.Errorf("storage: look up volume %s: %w", name, err)
	}
	p.events.Event(pvc, corev1.EventTypeNormal, "Provisioning",
		fmt.Sprintf("External provisioner is provisioning volume for claim %q", pvc.Namespace+"/"+pvc.Name))
	failed := func(err error) error {
		p.events.Event(pvc, corev1.EventTypeWarning, "ProvisioningFailed", err.Error())
		return err
	}
	pv, err := p.newVolume(ctx, pvc, class, name)
	if err != nil {
		return failed(err)
	}
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		return nil
	} else if err != nil {
		_ = os.Remove(pv.Spec.HostPath.Path) // only if still empty
		return failed(fmt.Errorf("storage: create volume %s for claim %s/%s: %w", name, pvc.Namespace, pvc.Name, err))
	}
	req := pv.Spec.Capacity[corev1.ResourceStorage]
	p.cfg.Log.Info("provisioned volume", "pv", name, "claim", pvc.Namespace+"/"+pvc.Name, "size", req.String())
	p.events.Event(pvc, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+name)
	return nil
}

// newVolume checks the claim fits in the cluster's storage capacity, creates
// its folder and returns its PersistentVolume, bound to the claim.
func (p *provisioner) newVolume(ctx context.Context, pvc *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, name string) (*corev1.PersistentVolume, error) {
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !p.cfg.Capacity.IsZero() {
		used, err := p.used(ctx)
		if err != nil {
			return nil, err
		}
		free := p.cfg.Capacity.DeepCopy()
		free.Sub(used)
		if req.Cmp(free) > 0 {
			return nil, fmt.Errorf("%w: claim %s/%s requests %s but only %s of %s is free; request less or raise the cluster's storage capacity",
				ErrInsufficientCapacity, pvc.Namespace, pvc.Name, req.String(), free.String(), p.cfg.Capacity.String())
		}
	}
	dir := filepath.Join(p.cfg.Root, name)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	// Any user may write, as with most local-path provisioners; fsGroup narrows it per pod.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, fmt.Errorf("storage: chmod %s: %w", dir, err)
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	typ := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{annProvisionedBy: ProvisionerName},
		},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			AccessModes:                   pvc.Spec.AccessModes,
			VolumeMode:                    pvc.Spec.VolumeMode,
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: req},
			// The binder binds a volume that names its claim at once.
			ClaimRef: &corev1.ObjectReference{
				Kind:            "PersistentVolumeClaim",
				APIVersion:      "v1",
				Namespace:       pvc.Namespace,
				Name:            pvc.Name,
				UID:             pvc.UID,
				ResourceVersion: pvc.ResourceVersion,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &typ},
			},
		},
	}, nil
}

// syncVolume deletes the volume, folder and PersistentVolume, if it is this
// provisioner's and released.
func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("storage: read volume %s: %w", name, err)
	}
	if ok, err := p.reclaimable(ctx, pv); err != nil || !ok {
		return err
	}
	if pv.Spec.HostPath == nil || !p.owns(pv.Spec.HostPath.Path) {
		p.cfg.Log.Info("not deleting a released volume outside the volume folder", "pv", name)
		return nil
	}
	dir := pv.Spec.HostPath.Path
	if err := os.RemoveAll(dir); err != nil {
		err = fmt.Errorf("storage: delete %s of volume %s: %w", dir, name, err)
		p.events.Event(pv, corev1.EventTypeWarning, "VolumeFailedDelete", err.Error())
		return err
	}
	var opts metav1.DeleteOptions
	if pv.UID != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &pv.UID}
	}
	if err := p.client.CoreV1().PersistentVolumes().Delete(ctx, name, opts); err != nil && !apierrors.IsNotFound(err) {
		err = fmt.Errorf("storage: delete volume %s: %w", name, err)
		p.events.Event(pv, corev1.EventTypeWarning, "VolumeFailedDelete", err.Error())
		return err
	}
	p.cfg.Log.Info("deleted volume", "pv", name)
	return nil
}

// reclaimable reports whether pv is this provisioner's volume, with reclaim
// policy Delete, whose claim is gone: the volume is Released, or its claim no
// longer exists.
func (p *provisioner) reclaimable(ctx context.Context, pv *corev1.PersistentVolume) (bool, error) {
	if pv.Annotations[annProvisionedBy] != ProvisionerName || pv.DeletionTimestamp != nil ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return false, nil
	}
	if pv.Status.Phase == corev1.VolumeReleased {
		return true, nil
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return false, nil
	}
	if pvc, err := p.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && pvc.UID == ref.UID {
		return false, nil
	}
	// The cache may lag: ask the API server before deleting.
	pvc, err := p.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("storage: look up claim %s/%s of volume %s: %w", ref.Namespace, ref.Name, pv.Name, err)
	}
	return pvc.UID != ref.UID, nil
}

// provisionerOf is the provisioner the volume binder expects for the claim.
func provisionerOf(pvc *corev1.PersistentVolumeClaim) string {
	if name, ok := pvc.Annotations[annStorageProvisioner]; ok {
		return name
	}
	return pvc.Annotations[annBetaStorageProvisioner]
}

// classOf is the claim's StorageClass name.
func classOf(pvc *corev1.PersistentVolumeClaim) string {
	if name, ok := pvc.Annotations[annBetaStorageClass]; ok {
		return name
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// volumeNameFor is the name of the claim's volume (external provisioners'
// convention).
func volumeNameFor(pvc *corev1.PersistentVolumeClaim) string {
	return "pvc-" + string(pvc.UID)
}
