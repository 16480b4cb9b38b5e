package controller

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/machine"
)

// BackupReconciler reconciles ValkeyBackups with machine.StepBackup.
type BackupReconciler struct {
	Client   client.Client
	Reader   client.Reader
	Recorder events.EventRecorder
	Metrics  *Metrics
	Log      logr.Logger
}

// Reconcile runs one pass.
func (r *BackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	log := r.Log.WithValues("valkeybackup", req.NamespacedName.String())
	b := &v1alpha1.ValkeyBackup{}
	if err := r.Reader.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	ex := &executor{client: r.Client, reader: r.Reader}
	in := machine.BackupInput{Backup: b, Now: time.Now()}
	var s machine.State
	var resp machine.Response
	var next machine.Request
	for {
		s, next = machine.StepBackup(in, resp, s)
		for _, e := range next.Events {
			if r.Recorder != nil {
				r.Recorder.Eventf(b, nil, e.Type, e.Reason, "Backup", "%s", e.Message)
			}
			if r.Metrics != nil {
				r.Metrics.event(req.NamespacedName, e.Reason)
			}
			log.Info("event", "reason", e.Reason, "message", e.Message)
		}
		if next.Kind == machine.Done {
			break
		}
		log.V(1).Info("request", "kind", next.Kind.String(), "what", describe(next), "why", next.Why)
		resp = ex.do(ctx, next)
	}
	if next.Err != nil {
		return ctrl.Result{}, next.Err
	}
	return ctrl.Result{RequeueAfter: next.RequeueAfter}, nil
}

// SetupWithManager registers the reconciler: backups, and the snapshot pods they own.
func (r *BackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("valkeybackup").
		For(&v1alpha1.ValkeyBackup{}).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}
