// Command cainjector is cert-manager's CA injector, built by Gauntlet from the
// pinned cert-manager module (see ../controller/main.go for why Gauntlet writes
// the command itself). It copies CA bundles into webhook configurations,
// APIServices and CRD conversion settings annotated with
// cert-manager.io/inject-ca-from(-secret), with the module's reconcilers on a
// controller-runtime manager, without leader election (one replica), its cache and
// client configured as cert-manager's own command configures them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	admissionreg "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	var (
		namespace = flag.String("namespace", "", "namespace of the Secrets and Certificates read (empty: all)")
		metrics   = flag.String("metrics-listen-address", "0.0.0.0:9402", "metrics address (0 turns it off)")
		healthz   = flag.String("healthz-listen-address", "0.0.0.0:9403", "address of /livez and /readyz")
	)
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	log := logf.Log.WithName("cainjector")
	ctrl.SetLogger(log)
	ctx = logf.NewContext(ctx, log)

	scheme := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(admissionreg.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))
	utilruntime.Must(cmapi.AddToScheme(scheme))

	cfg, err := ctrl.GetConfig()
	if err != nil {
		fail("kubernetes config: %v", err)
	}
	// The injectors' field manager is derived from the user agent, as cert-manager's own command sets it.
	cfg = util.RestConfigWithUserAgent(cfg, "cainjector")
	// As cert-manager's own command: the cache watches only --namespace when it is set, and
	// Secrets are read from the API server, never from a cache. The injectors watch Secrets'
	// metadata and then read the Secret; read through a second, full-object cache, a Secret
	// created just after the first reconcile (the webhook's CA, seconds after start) could be
	// absent from that cache when its metadata event arrived: "not found" drops the request
	// without a retry, and the webhook configurations never got their CA bundle (CI's
	// cert-manager e2e, 2026-11-27: x509 "unknown authority" for 3 minutes, caBundle empty).
	var namespaces map[string]cache.Config
	if *namespace != "" {
		namespaces = map[string]cache.Config{*namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cache.Options{ReaderFailOnMissingInformer: true, DefaultNamespaces: namespaces},
		Client:                 client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics:                metricsserver.Options{BindAddress: *metrics},
		HealthProbeBindAddress: *healthz,
		LivenessEndpointName:   "/livez",
		ReadinessEndpointName:  "/readyz",
	})
	if err != nil {
		fail("controller manager: %v", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		Namespace:                    *namespace,
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		fail("register the injectors: %v", err)
	}
	if err := mgr.Start(ctx); err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cert-manager cainjector: "+format+"\n", args...)
	os.Exit(1)
}
