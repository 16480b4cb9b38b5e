// Package controller wires the pure state machines of package machine into
// controller-runtime: the reconcilers of ValkeyCluster and ValkeyBackup (thin
// loops that execute one request per step), the health Monitor, metrics, and the
// watches.
package controller

import (
	"context"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/machine"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// +kubebuilder:rbac:groups=valkey.gauntlet.dev,resources=valkeyclusters;valkeybackups,verbs=get;list;watch
// +kubebuilder:rbac:groups=valkey.gauntlet.dev,resources=valkeyclusters/status;valkeybackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;create;update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch

// ClusterReconciler reconciles ValkeyClusters: one pass of machine.Step per
// reconcile, executing each request it asks for.
type ClusterReconciler struct {
	// Client is the manager's (cached) client.
	Client client.Client
	// Reader reads from the API server directly (the custom resource at the
	// start of each pass, Secrets, claims).
	Reader client.Reader
	// Valkey talks to the servers.
	Valkey valkey.Client
	// Monitor checks the pods' health.
	Monitor *Monitor
	// Recorder records events on the ValkeyCluster.
	Recorder events.EventRecorder
	// Metrics counts events (optional).
	Metrics *Metrics
	// Log is the base logger.
	Log logr.Logger
}

// Reconcile runs one pass.
func (r *ClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (ctrl.Result, error) {
	log := r.Log.WithValues("valkeycluster", req.NamespacedName.String())
	cr := &v1alpha1.ValkeyCluster{}
	// Read from the API server, not the cache: status.primary must never be stale.
	if err := r.Reader.Get(ctx, req.NamespacedName, cr); err != nil {
		if apierrors.IsNotFound(err) {
			r.Monitor.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	ex := &executor{client: r.Client, reader: r.Reader, valkey: r.Valkey}
	in := machine.Input{Cluster: cr, Health: r.Monitor.Snapshot(req.NamespacedName), Now: time.Now()}
	observed := map[string]valkey.Endpoint{}
	var s machine.State
	var resp machine.Response
	var next machine.Request
	for {
		s, next = machine.Step(in, resp, s)
		r.record(cr, req.NamespacedName, next.Events, log)
		if next.Kind == machine.Done {
			break
		}
		if log.V(1).Enabled() {
			log.V(1).Info("request", "kind", next.Kind.String(), "what", describe(next), "why", next.Why)
		}
		if next.Kind == machine.Valkey && strings.EqualFold(next.Valkey.Args[0], "INFO") {
			observed[next.Valkey.Pod] = next.Valkey.Endpoint
		}
		resp = ex.do(ctx, next)
		if ctx.Err() != nil {
			return ctrl.Result{}, ctx.Err()
		}
	}
	if cr.DeletionTimestamp == nil {
		r.track(ctx, cr, observed)
	}
	if next.Err != nil {
		log.Error(next.Err, "pass failed", "steps", s.Steps)
		return ctrl.Result{}, next.Err
	}
	if next.Why != "converged" {
		log.Info("pass", "steps", s.Steps, "state", next.Why, "requeueAfter", next.RequeueAfter.String())
	} else {
		log.V(1).Info("pass", "steps", s.Steps, "state", next.Why)
	}
	return ctrl.Result{RequeueAfter: next.RequeueAfter}, nil
}

// track hands the monitor the pods to check: those the pass reached, and the
// ones it skipped (down) at their unchanged address.
func (r *ClusterReconciler) track(ctx context.Context, cr *v1alpha1.ValkeyCluster, observed map[string]valkey.Endpoint) {
	key := client.ObjectKeyFromObject(cr)
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(v1alpha1.SelectorLabels(cr.Name))); err != nil {
		return
	}
	prev := r.Monitor.Targets(key)
	var targets []Target
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			continue
		}
		addr := net.JoinHostPort(p.Status.PodIP, strconv.Itoa(conf.Port))
		if ep, ok := observed[p.Name]; ok && ep.Addr == addr {
			targets = append(targets, Target{Pod: p.Name, Endpoint: ep})
		} else if t, ok := prev[p.Name]; ok && t.Endpoint.Addr == addr {
			targets = append(targets, t)
		}
	}
	d := cr.Defaulted().Spec.Failover
	r.Monitor.Track(key, targets, ProbeConfig{Interval: d.HealthCheckInterval.Duration, Timeout: d.Timeout.Duration, DownAfter: d.DownAfter.Duration})
}

func (r *ClusterReconciler) record(obj *v1alpha1.ValkeyCluster, key types.NamespacedName, evs []machine.Event, log logr.Logger) {
	for _, e := range evs {
		if r.Recorder != nil {
			r.Recorder.Eventf(obj, nil, e.Type, e.Reason, "Reconcile", "%s", e.Message)
		}
		if r.Metrics != nil {
			r.Metrics.event(key, e.Reason)
		}
		log.Info("event", "reason", e.Reason, "message", e.Message)
	}
}

// describe names a request's target, without secrets (ACL SETUSER and CONFIG
// SET masterauth carry passwords).
func describe(req machine.Request) string {
	switch req.Kind {
	case machine.Valkey:
		args := req.Valkey.Args
		cmd := strings.ToUpper(args[0])
		if cmd == "ACL" || (cmd == "CONFIG" && len(args) > 2 && strings.Contains(strings.ToLower(strings.Join(args[2:], " ")), "masterauth")) {
			return req.Valkey.Pod + ": " + strings.ToUpper(strings.Join(args[:min(2, len(args))], " ")) + " <redacted>"
		}
		return req.Valkey.Pod + ": " + strings.Join(args, " ")
	case machine.List:
		return "list"
	}
	if req.Object != nil {
		return typeName(req.Object) + " " + req.Object.GetName()
	}
	return ""
}

func typeName(o any) string {
	switch o.(type) {
	case *corev1.Pod:
		return "Pod"
	case *corev1.Service:
		return "Service"
	case *corev1.ConfigMap:
		return "ConfigMap"
	case *corev1.Secret:
		return "Secret"
	case *appsv1.StatefulSet:
		return "StatefulSet"
	case *policyv1.PodDisruptionBudget:
		return "PodDisruptionBudget"
	case *v1alpha1.ValkeyCluster:
		return "ValkeyCluster"
	case *v1alpha1.ValkeyBackup:
		return "ValkeyBackup"
	}
	return "object"
}

// SetupWithManager registers the reconciler and its watches.
func (r *ClusterReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	podToCluster := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		l := o.GetLabels()
		switch l[v1alpha1.LabelName] {
		case v1alpha1.AppName, "valkey-restore":
			if inst := l[v1alpha1.LabelInstance]; inst != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: inst}}}
			}
		}
		return nil
	})
	backupToClusters := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &v1alpha1.ValkeyClusterList{}
		if err := r.Client.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, c := range list.Items {
			if c.Spec.RestoreFrom != nil && c.Spec.RestoreFrom.BackupName == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("valkeycluster").
		For(&v1alpha1.ValkeyCluster{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, podToCluster).
		Watches(&v1alpha1.ValkeyBackup{}, backupToClusters).
		WatchesRawSource(r.Monitor.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Complete(r)
}
