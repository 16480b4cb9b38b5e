package machine

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
)

// BackupInput is the desired side of a ValkeyBackup pass.
type BackupInput struct {
	Backup *v1alpha1.ValkeyBackup
	Now    time.Time
}

// StepBackup is the pure transition of the ValkeyBackup reconciler, with the
// same journal semantics as Step: ensure the claim, wait for the cluster's
// primary, run a snapshot pod against it, record its path, size and checksum.
func StepBackup(in BackupInput, resp Response, s State) (State, Request) {
	return step(resp, s, func(s *State) Request {
		p := &backupPass{pass: pass{s: s, in: Input{Now: in.Now}}}
		if in.Backup != nil {
			p.stored = in.Backup.DeepCopy()
			p.b = in.Backup.DeepCopy()
		}
		return p.runBackup()
	})
}

type backupPass struct {
	pass
	// stored is the object as last read or written; b carries the status being built.
	stored, b *v1alpha1.ValkeyBackup
}

func (p *backupPass) runBackup() (req Request) {
	defer func() {
		if r := recover(); r != nil {
			switch e := r.(type) {
			case *errNeed:
				req = e.req
			case *endPass:
				req = e.req
			default:
				panic(r)
			}
			req.Events = p.events
		}
	}()
	req = p.reconcileBackup()
	req.Kind = Done
	req.Events = p.events
	return req
}

func (p *backupPass) reconcileBackup() Request {
	if p.b == nil || p.b.DeletionTimestamp != nil {
		return done(0, nil)
	}
	b := p.b.Defaulted()
	podKey := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: resources.BackupPodName(b), Namespace: b.Namespace}}
	if b.Status.Phase == v1alpha1.BackupCompleted || b.Status.Phase == v1alpha1.BackupFailed {
		// Finished: the snapshot pod has done its work.
		if cur, found, err := p.get("get:snapshot-pod", podKey); err == nil && found && metav1.IsControlledBy(cur, b) {
			if _, err := p.write("delete:snapshot-pod", Delete, cur, "snapshot finished"); err != nil && !isNotFound(err) {
				p.apiErr("delete the snapshot pod", err)
			}
		}
		return done(0, nil)
	}

	claim, found, err := p.get("get:claim", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: resources.BackupClaimName(b), Namespace: b.Namespace}})
	if err != nil {
		p.apiErr("read the backup claim", err)
	}
	if !found {
		if _, err := p.write("create:claim", Create, resources.MakeBackupClaim(b), "store the snapshot"); err != nil && !isConflict(err) {
			p.apiErr("create the backup claim", err)
		}
	} else if !metav1.IsControlledBy(claim, b) {
		return p.backupStatus(v1alpha1.BackupFailed, fmt.Sprintf("claim %q exists and does not belong to this ValkeyBackup: delete it or rename the backup", claim.GetName()), 0)
	}

	obj, found, err := p.get("get:cluster", &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: b.Spec.ClusterName, Namespace: b.Namespace}})
	if err != nil {
		p.apiErr("read the ValkeyCluster", err)
	}
	if !found {
		return p.backupStatus(v1alpha1.BackupPending, fmt.Sprintf("ValkeyCluster %q does not exist", b.Spec.ClusterName), 10*time.Second)
	}
	c := obj.(*v1alpha1.ValkeyCluster).Defaulted()

	pod, found, err := p.get("get:snapshot-pod", podKey)
	if err != nil {
		p.apiErr("read the snapshot pod", err)
	}
	if !found {
		if c.Status.Primary == "" || !meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.ConditionPrimaryAvailable) {
			return p.backupStatus(v1alpha1.BackupPending, fmt.Sprintf("waiting for a serving primary in ValkeyCluster %q", c.Name), 5*time.Second)
		}
		prim, found, err := p.get("get:primary", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: c.Status.Primary, Namespace: c.Namespace}})
		if err != nil {
			p.apiErr("read the primary pod", err)
		}
		if !found || prim.(*corev1.Pod).Status.PodIP == "" {
			return p.backupStatus(v1alpha1.BackupPending, "waiting for the primary pod's address", 2*time.Second)
		}
		// The status first: a crash after creating the pod finds it Running.
		p.b.Status.SourcePod = c.Status.Primary
		now := metav1.NewTime(p.in.Now)
		p.b.Status.StartTime = &now
		p.b.Status.PersistentVolumeClaim = resources.BackupClaimName(b)
		p.backupStatusWrite("status:running", v1alpha1.BackupRunning, "snapshot of "+c.Status.Primary+" in progress")
		if _, err := p.write("create:snapshot-pod", Create, resources.MakeBackupPod(b, c, prim.(*corev1.Pod).Status.PodIP), "take the snapshot"); err != nil && !isConflict(err) {
			p.apiErr("create the snapshot pod", err)
		}
		p.emit("backup:start", corev1.EventTypeNormal, "BackupStarted", "snapshot of "+c.Status.Primary)
		return done(2*time.Second, nil)
	}
	sp := pod.(*corev1.Pod)
	switch sp.Status.Phase {
	case corev1.PodSucceeded:
		msg := terminationMessage(sp)
		sum, size, ok := resources.ParseBackupResult(msg)
		if !ok {
			return p.backupStatus(v1alpha1.BackupFailed, "the snapshot pod finished without reporting a checksum: "+msg, 0)
		}
		p.b.Status.Path = resources.BackupFile
		p.b.Status.Size = size
		p.b.Status.Checksum = sum
		p.b.Status.PersistentVolumeClaim = resources.BackupClaimName(b)
		now := metav1.NewTime(p.in.Now)
		p.b.Status.CompletionTime = &now
		p.emit("backup:done", corev1.EventTypeNormal, "BackupCompleted", fmt.Sprintf("%d bytes, %s", size, sum))
		return p.backupStatus(v1alpha1.BackupCompleted, fmt.Sprintf("%d bytes from %s", size, p.b.Status.SourcePod), 0)
	case corev1.PodFailed:
		p.emit("backup:failed", corev1.EventTypeWarning, "BackupFailed", terminationMessage(sp))
		return p.backupStatus(v1alpha1.BackupFailed, "the snapshot failed: "+terminationMessage(sp), 0)
	}
	return p.backupStatus(v1alpha1.BackupRunning, "snapshot in progress", 2*time.Second)
}

func terminationMessage(pod *corev1.Pod) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			if t.Message != "" {
				return t.Message
			}
			return fmt.Sprintf("exit code %d (%s)", t.ExitCode, t.Reason)
		}
	}
	return pod.Status.Message
}

func (p *backupPass) backupStatus(phase v1alpha1.BackupPhase, msg string, after time.Duration) Request {
	p.backupStatusWrite("status", phase, msg)
	return done(after, nil)
}

func (p *backupPass) backupStatusWrite(key string, phase v1alpha1.BackupPhase, msg string) {
	next := p.stored.DeepCopy()
	next.Status = *p.b.Status.DeepCopy()
	next.Status.Phase = phase
	next.Status.Message = msg
	next.Status.ObservedGeneration = next.Generation
	if equalBackupStatus(next.Status, p.stored.Status) {
		return
	}
	obj, err := p.write(key, UpdateStatus, next, "backup "+string(phase))
	if err != nil {
		p.apiErr("write the backup status", err)
	}
	p.stored = obj.(*v1alpha1.ValkeyBackup)
	p.b.Status = *p.stored.Status.DeepCopy()
}

func equalBackupStatus(a, b v1alpha1.ValkeyBackupStatus) bool {
	return a.Phase == b.Phase && a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration &&
		a.Checksum == b.Checksum && a.Size == b.Size && a.SourcePod == b.SourcePod && a.Path == b.Path &&
		a.PersistentVolumeClaim == b.PersistentVolumeClaim && a.StartTime.Equal(b.StartTime) && a.CompletionTime.Equal(b.CompletionTime)
}
