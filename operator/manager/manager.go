// Package manager runs the bundled Valkey operator: a controller-runtime
// manager with the ValkeyCluster and ValkeyBackup controllers, the health
// monitor, metrics, health probes and leader election. cmd/valkey-operator parses
// flags into Options and calls Run.
package manager

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/controller"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// Options configure Run. The zero value watches every namespace, without
// leader election, metrics on :8080 and probes on :8081.
type Options struct {
	// Namespaces to watch; empty means all.
	Namespaces []string
	// MetricsAddr of the Prometheus endpoint ("0" disables it; "" is ":8080").
	MetricsAddr string
	// ProbeAddr of /healthz and /readyz ("" is ":8081"; "0" disables them).
	ProbeAddr string
	// LeaderElection through a Lease named LeaderElectionID in
	// LeaderElectionNamespace (default: the pod's namespace).
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	// MaxConcurrentReconciles of ValkeyClusters (default 4).
	MaxConcurrentReconciles int
}

// Run runs the operator until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options, logger logr.Logger) error {
	if o.MetricsAddr == "" {
		o.MetricsAddr = ":8080"
	}
	if o.ProbeAddr == "" {
		o.ProbeAddr = ":8081"
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "valkey-operator.valkey.gauntlet.dev"
	}
	if o.MaxConcurrentReconciles < 1 {
		o.MaxConcurrentReconciles = 4
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}

	// The cache holds only the operator's own objects (labelled managed-by).
	own := labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy})
	cacheOpts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   {Label: own},
		&corev1.Service{}:               {Label: own},
		&corev1.ConfigMap{}:             {Label: own},
		&appsv1.StatefulSet{}:           {Label: own},
		&policyv1.PodDisruptionBudget{}: {Label: own},
	}}
	if len(o.Namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.Namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, manager.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.ProbeAddr,
		LeaderElection:                o.LeaderElection,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionReleaseOnCancel: true,
		Logger:                        logger,
		Client: client.Options{Cache: &client.CacheOptions{
			// Never served from the cache (the operator does not watch them).
			DisableFor: []client.Object{&corev1.Secret{}, &corev1.PersistentVolumeClaim{}},
		}},
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}

	pool := valkey.NewPool()
	defer pool.Close()
	m, err := controller.NewMetrics(metrics.Registry)
	if err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	mon := controller.NewMonitor(pool, logger.WithName("health"), m)
	if err := mgr.Add(mon); err != nil {
		return err
	}
	cr := &controller.ClusterReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Valkey: pool, Monitor: mon,
		Recorder: mgr.GetEventRecorder("valkey-operator"), Metrics: m, Log: logger.WithName("valkeycluster"),
	}
	if err := cr.SetupWithManager(mgr, o.MaxConcurrentReconciles); err != nil {
		return fmt.Errorf("set up the ValkeyCluster controller: %w", err)
	}
	br := &controller.BackupReconciler{
		Client: mgr.GetClient(), Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("valkey-operator"), Metrics: m, Log: logger.WithName("valkeybackup"),
	}
	if err := br.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the ValkeyBackup controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	logger.Info("starting", "namespaces", o.Namespaces, "leaderElection", o.LeaderElection, "metrics", o.MetricsAddr)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}
