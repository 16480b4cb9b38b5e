package storage

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
)

// The resizer grows this provisioner's volumes when a bound claim asks for
// more than it has, in the steps and with the status a real cluster shows
// (Kubernetes v1.35, where RecoverVolumeExpansionFailure is GA):
//
//  1. as CSI's external-resizer: the claim gets condition Resizing,
//     status.allocatedResources[storage] = the request and
//     allocatedResourceStatuses[storage] = ControllerResizeInProgress (event
//     Resizing); the PersistentVolume's spec.capacity grows (ControllerExpandVolume);
//     then FileSystemResizePending with NodeResizePending (event
//     FileSystemResizeRequired), as for any filesystem volume;
//  2. as the kubelet: once a pod on a node uses the claim (at once when one
//     already runs: online expansion), NodeResizeInProgress, then
//     status.capacity = the volume's capacity with the statuses and resize
//     conditions cleared (event FileSystemResizeSuccessful on the claim and the
//     pod). With no pod the claim waits in FileSystemResizePending, as it
//     would on a real node.
//
// A growth the cluster's storage capacity cannot hold fails as an infeasible
// controller resize (ControllerResizeInfeasible, condition
// ControllerResizeError, a VolumeResizeFailed warning); it is retried when
// capacity frees up, and the user may recover by lowering the request to a
// size above status.capacity, which the API server allows.
//
// The kube-controller-manager's expand controller does not compete: a
// hostPath volume is neither an expandable in-tree volume nor a CSI-migrated
// one, so it only records an ExternalExpanding event ("waiting for an external
// controller to expand this PVC") and leaves the claim alone, as it does for
// CSI volumes on a real cluster.
//
// Volumes are host folders: nothing is resized on disk, and no size, old or
// new, limits what a pod writes there.

const (
	// resizerComponent is the event source of the controller steps (as the
	// external-resizer names itself after its driver).
	resizerComponent = "external-resizer " + ProvisionerName
	// fsResizePendingMessage is the kubelet's and external-resizer's message.
	fsResizePendingMessage = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
	// resizeResync re-examines every claim, so an infeasible growth is retried
	// once capacity frees up.
	resizeResync = 30 * time.Second
)

// resizeConditions are the claim conditions the resize steps own.
var resizeConditions = map[corev1.PersistentVolumeClaimConditionType]bool{
	corev1.PersistentVolumeClaimResizing:                true,
	corev1.PersistentVolumeClaimFileSystemResizePending: true,
	corev1.PersistentVolumeClaimControllerResizeError:   true,
	corev1.PersistentVolumeClaimNodeResizeError:         true,
}

// stepKind is what the resizer does next for a claim.
type stepKind int

const (
	stepNone stepKind = iota
	// stepStart marks a controller resize in progress for the request.
	stepStart
	// stepExpand grows the PersistentVolume's spec.capacity.
	stepExpand
	// stepInfeasible records a growth the cluster's capacity cannot hold.
	stepInfeasible
	// stepNodePending hands the growth over to the node.
	stepNodePending
	// stepNodeInProgress is the kubelet's mark before it expands.
	stepNodeInProgress
	// stepNodeFinish records the new capacity on the claim.
	stepNodeFinish
)

var stepNames = [...]string{"none", "start", "expand", "infeasible", "node-pending", "node-in-progress", "node-finish"}

func (k stepKind) String() string { return stepNames[k] }

// claimView is what the resizer knows of one claim.
type claimView struct {
	PVC *corev1.PersistentVolumeClaim
	// PV is the claim's volume; nil when missing or not this provisioner's.
	PV *corev1.PersistentVolume
	// User is a pod placed on a node that uses the claim; nil when none.
	User *corev1.Pod
	// Free is the cluster's storage capacity left; nil means unlimited.
	Free *resource.Quantity
}

// resizeStep is the resizer's next write for a claim.
type resizeStep struct {
	Kind stepKind
	// Size is the size the step records or expands to.
	Size resource.Quantity
	// Message explains an infeasible growth.
	Message string
}

// decide returns the next step for a claim: a pure function of what is known,
// so the resizer is level-triggered (each write brings the claim back with its
// new state).
func decide(v claimView) resizeStep {
	pvc, pv := v.PVC, v.PV
	if pvc == nil || pv == nil || pvc.DeletionTimestamp != nil || pvc.Status.Phase != corev1.ClaimBound ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID || pvc.Spec.VolumeName != pv.Name {
		return resizeStep{}
	}
	req := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	capNow := pvc.Status.Capacity[corev1.ResourceStorage]
	pvSize := pv.Spec.Capacity[corev1.ResourceStorage]
	status := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	alloc, hasAlloc := pvc.Status.AllocatedResources[corev1.ResourceStorage]

	// The node's part first: a growth handed over to the node finishes before
	// a newer request starts (as the external-resizer waits for it).
	if status == corev1.PersistentVolumeClaimNodeResizePending || status == corev1.PersistentVolumeClaimNodeResizeInProgress {
		switch {
		case pvSize.Cmp(capNow) <= 0:
			return resizeStep{Kind: stepNodeFinish, Size: capNow}
		case v.User == nil:
			return resizeStep{} // until a pod uses the claim
		case status == corev1.PersistentVolumeClaimNodeResizePending:
			return resizeStep{Kind: stepNodeInProgress, Size: pvSize}
		default:
			return resizeStep{Kind: stepNodeFinish, Size: pvSize}
		}
	}
	if req.Cmp(capNow) <= 0 {
		return resizeStep{}
	}
	current := hasAlloc && alloc.Cmp(req) == 0
	growth := req.DeepCopy()
	growth.Sub(pvSize)
	fits := growth.Sign() <= 0 || v.Free == nil || growth.Cmp(*v.Free) <= 0
	switch {
	case current && status == corev1.PersistentVolumeClaimControllerResizeInfeasible && !fits:
		return resizeStep{} // retried when capacity frees up
	case !current || status != corev1.PersistentVolumeClaimControllerResizeInProgress:
		return resizeStep{Kind: stepStart, Size: req}
	case pvSize.Cmp(req) >= 0:
		return resizeStep{Kind: stepNodePending, Size: req}
	case !fits:
		return resizeStep{Kind: stepInfeasible, Size: req, Message: fmt.Sprintf(
			"%v: growing volume %s from %s to %s needs %s more but only %s is free; request less or raise the cluster's storage capacity",
			ErrInsufficientCapacity, pv.Name, pvSize.String(), req.String(), growth.String(), v.Free.String())}
	default:
		return resizeStep{Kind: stepExpand, Size: req}
	}
}

// applyClaim returns the claim as the step leaves it (nil for a step that
// writes no claim status).
func applyClaim(s resizeStep, pvc *corev1.PersistentVolumeClaim, now metav1.Time) *corev1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	st := &out.Status
	switch s.Kind {
	case stepStart:
		st.Conditions = mergeResizeConditions(st.Conditions, false,
			corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, LastTransitionTime: now})
		setStorage(&st.AllocatedResources, s.Size)
		setStorageStatus(out, corev1.PersistentVolumeClaimControllerResizeInProgress)
	case stepInfeasible:
		st.Conditions = mergeResizeConditions(st.Conditions, true,
			corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, LastTransitionTime: now,
				Message: "failed to expand pvc with " + s.Message})
		setStorageStatus(out, corev1.PersistentVolumeClaimControllerResizeInfeasible)
	case stepNodePending:
		st.Conditions = mergeResizeConditions(st.Conditions, false,
			corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue, LastTransitionTime: now,
				Message: fsResizePendingMessage})
		setStorageStatus(out, corev1.PersistentVolumeClaimNodeResizePending)
	case stepNodeInProgress:
		setStorageStatus(out, corev1.PersistentVolumeClaimNodeResizeInProgress)
	case stepNodeFinish:
		setStorage(&st.Capacity, s.Size)
		delete(st.AllocatedResourceStatuses, corev1.ResourceStorage)
		if len(st.AllocatedResourceStatuses) == 0 {
			st.AllocatedResourceStatuses = nil
		}
		st.Conditions = mergeResizeConditions(st.Conditions, false)
	default:
		return nil
	}
	return out
}

// applyVolume returns the volume as the step leaves it (nil for a step that
// writes no volume).
func applyVolume(s resizeStep, pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	if s.Kind != stepExpand {
		return nil
	}
	out := pv.DeepCopy()
	setStorage(&out.Spec.Capacity, s.Size)
	return out
}

// mergeResizeConditions keeps the conditions that are not the resizer's, sets
// the given ones (keeping a condition's transition time when its status is
// unchanged) and drops the resizer's other conditions unless keepOld.
func mergeResizeConditions(old []corev1.PersistentVolumeClaimCondition, keepOld bool, set ...corev1.PersistentVolumeClaimCondition) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	done := map[corev1.PersistentVolumeClaimConditionType]bool{}
	for _, c := range old {
		if !resizeConditions[c.Type] {
			out = append(out, c)
			continue
		}
		replaced := false
		for _, n := range set {
			if n.Type == c.Type {
				if n.Status == c.Status {
					n.LastTransitionTime = c.LastTransitionTime
				}
				out = append(out, n)
				done[n.Type], replaced = true, true
			}
		}
		if !replaced && keepOld {
			out = append(out, c)
		}
	}
	for _, n := range set {
		if !done[n.Type] {
			out = append(out, n)
		}
	}
	return out
}

func setStorage(l *corev1.ResourceList, q resource.Quantity) {
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[corev1.ResourceStorage] = q
}

func setStorageStatus(pvc *corev1.PersistentVolumeClaim, s corev1.ClaimResourceStatus) {
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = s
}

// usesClaim reports whether a pod placed on a node, not finished, mounts the
// claim (directly or as a generic ephemeral volume).
func usesClaim(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != pvc.Namespace || pod.Spec.NodeName == "" ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, v := range pod.Spec.Volumes {
		if claimOf(pod, v) == pvc.Name {
			return true
		}
	}
	return false
}

func claimOf(pod *corev1.Pod, v corev1.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		return pod.Name + "-" + v.Name
	}
	return ""
}

// resizer runs decide for every claim of this provisioner's volumes.
type resizer struct {
	client   kubernetes.Interface
	log      *slog.Logger
	capacity resource.Quantity
	owns     func(path string) bool
	pvcs     corelisters.PersistentVolumeClaimLister
	pvs      corelisters.PersistentVolumeLister
	pods     corelisters.PodLister
	queue    workqueue.TypedRateLimitingInterface[string]
	events   record.EventBroadcaster
	resizer  record.EventRecorder
}

// runResizer resizes volumes until ctx is done.
func runResizer(ctx context.Context, client kubernetes.Interface, cfg Config, owns func(string) bool) {
	f := informers.NewSharedInformerFactory(client, resizeResync)
	pvcInf, pvInf, podInf := f.Core().V1().PersistentVolumeClaims(), f.Core().V1().PersistentVolumes(), f.Core().V1().Pods()
	eb := record.NewBroadcaster(record.WithContext(ctx))
	eb.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer eb.Shutdown()
	r := &resizer{
		client: client, log: cfg.Log, capacity: cfg.Capacity, owns: owns,
		pvcs: pvcInf.Lister(), pvs: pvInf.Lister(), pods: podInf.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "volume_resize"}),
		events:  eb,
		resizer: eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: resizerComponent}),
	}
	defer r.queue.ShutDown()
	_, _ = pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueueClaim,
		UpdateFunc: func(_, obj any) { r.enqueueClaim(obj) },
	})
	_, _ = pvInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueueVolume,
		UpdateFunc: func(_, obj any) { r.enqueueVolume(obj) },
	})
	_, _ = podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueuePod,
		UpdateFunc: func(_, obj any) { r.enqueuePod(obj) },
	})
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced, podInf.Informer().HasSynced) {
		return
	}
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	// One worker: growths are checked against the free capacity one at a time.
	for r.next(ctx) {
	}
}

func (r *resizer) enqueueClaim(obj any) {
	if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && pvc.Status.Phase == corev1.ClaimBound {
		r.queue.Add(pvc.Namespace + "/" + pvc.Name)
	}
}

func (r *resizer) enqueueVolume(obj any) {
	if pv, ok := obj.(*corev1.PersistentVolume); ok && pv.Spec.ClaimRef != nil {
		r.queue.Add(pv.Spec.ClaimRef.Namespace + "/" + pv.Spec.ClaimRef.Name)
	}
}

func (r *resizer) enqueuePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if name := claimOf(pod, v); name != "" {
			r.queue.Add(pod.Namespace + "/" + name)
		}
	}
}

func (r *resizer) next(ctx context.Context) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	if err := r.sync(ctx, key); err != nil {
		if ctx.Err() == nil {
			r.log.Info("volume resize step failed; retrying", "claim", key, "err", err)
		}
		r.queue.AddRateLimited(key)
		return true
	}
	r.queue.Forget(key)
	return true
}

// sync takes one step for the claim under key.
func (r *resizer) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pvc, err := r.pvcs.PersistentVolumeClaims(ns).Get(name)
	if err != nil || pvc.Spec.VolumeName == "" {
		return nil // gone, or not bound yet
	}
	pv, err := r.pvs.Get(pvc.Spec.VolumeName)
	if err != nil || pv.Spec.HostPath == nil || !r.owns(pv.Spec.HostPath.Path) {
		return nil // not this provisioner's volume
	}
	v := claimView{PVC: pvc, PV: pv}
	pods, err := r.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return fmt.Errorf("storage: list pods: %w", err)
	}
	for _, p := range pods {
		if usesClaim(p, pvc) {
			v.User = p
			break
		}
	}
	if !r.capacity.IsZero() {
		free, err := r.free()
		if err != nil {
			return err
		}
		v.Free = &free
	}
	step := decide(v)
	if step.Kind == stepNone {
		return nil
	}
	if nv := applyVolume(step, pv); nv != nil {
		if _, err := r.client.CoreV1().PersistentVolumes().Update(ctx, nv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("storage: grow volume %s to %s: %w", pv.Name, step.Size.String(), err)
		}
	}
	if nc := applyClaim(step, pvc, metav1.Now()); nc != nil {
		if _, err := r.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, nc, metav1.UpdateOptions{}); err != nil {
			if apierrors.IsConflict(err) {
				return fmt.Errorf("storage: claim %s changed meanwhile: %w", key, err)
			}
			return fmt.Errorf("storage: record resize step %s of claim %s: %w", step.Kind, key, err)
		}
	}
	r.log.Info("volume resize", "claim", key, "pv", pv.Name, "step", step.Kind.String(), "size", step.Size.String())
	r.record(step, pvc, pv, v.User)
	return nil
}

// record emits the step's events, as the external-resizer and the kubelet do.
func (r *resizer) record(s resizeStep, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, user *corev1.Pod) {
	switch s.Kind {
	case stepStart:
		r.resizer.Event(pvc, corev1.EventTypeNormal, "Resizing", "External resizer is resizing volume "+pv.Name)
	case stepInfeasible:
		r.resizer.Event(pvc, corev1.EventTypeWarning, "VolumeResizeFailed", s.Message)
	case stepNodePending:
		r.resizer.Event(pvc, corev1.EventTypeNormal, "FileSystemResizeRequired", "Require file system resize of volume on node")
	case stepNodeFinish:
		if user == nil {
			return
		}
		kubelet := r.events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: user.Spec.NodeName})
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv.Name, user.Spec.NodeName)
		kubelet.Event(user, corev1.EventTypeNormal, "FileSystemResizeSuccessful", msg)
		kubelet.Event(pvc, corev1.EventTypeNormal, "FileSystemResizeSuccessful", msg)
	}
}

// free is the cluster's storage capacity left, from the volume cache.
func (r *resizer) free() (resource.Quantity, error) {
	pvs, err := r.pvs.List(labels.Everything())
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("storage: list volumes: %w", err)
	}
	free := r.capacity.DeepCopy()
	for _, pv := range pvs {
		if pv.Spec.HostPath != nil && r.owns(pv.Spec.HostPath.Path) {
			free.Sub(pv.Spec.Capacity[corev1.ResourceStorage])
		}
	}
	return free, nil
}
