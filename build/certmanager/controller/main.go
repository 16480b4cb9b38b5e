// Command controller is cert-manager's controller, built by Gauntlet from the
// pinned cert-manager module (cert-manager ships its commands in modules of
// their own, which the Go module proxy does not serve; build.sh puts this file
// inside a copy of the module so that it can use the module's packages).
//
// It runs the controllers for the issuer types this build includes
// (SelfSigned, CA, Vault, ACME; Venafi's client module is not served by the Go
// module proxy, so its controllers are left out) without leader election (one
// replica). Flags are a small subset of cert-manager's.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	logf "github.com/cert-manager/cert-manager/pkg/logs"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

func main() {
	var (
		clusterResourceNS = flag.String("cluster-resource-namespace", "kube-system", "namespace of the Secrets ClusterIssuers refer to")
		namespace         = flag.String("namespace", "", "namespace to watch (empty: all)")
		workers           = flag.Int("concurrent-workers", 5, "workers per controller")
		healthz           = flag.String("healthz-listen-address", "0.0.0.0:9403", "address of the /livez endpoint")
		controllers       = flag.String("controllers", "*", "comma-separated controllers to run (* for all this build has)")
		ownerRef          = flag.Bool("enable-certificate-owner-ref", false, "make Certificates own their Secrets")
		kubeconfig        = flag.String("kubeconfig", "", "kubeconfig (empty: in-cluster)")
	)
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	log := logf.Log.WithName("controller")
	ctx = logf.NewContext(ctx, log)

	opts := controllerpkg.ContextOptions{
		Kubeconfig:         *kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          *namespace,
		IssuerOptions: controllerpkg.IssuerOptions{
			ClusterResourceNamespace:        *clusterResourceNS,
			ClusterIssuerAmbientCredentials: true,
		},
		ACMEOptions: controllerpkg.ACMEOptions{
			HTTP01SolverImage:     "quay.io/jetstack/cert-manager-acmesolver:gauntlet",
			DNS01CheckRetryPeriod: 10 * time.Second,
		},
		IngressShimOptions: controllerpkg.IngressShimOptions{DefaultIssuerKind: "Issuer", DefaultIssuerGroup: "cert-manager.io"},
		CertificateOptions: controllerpkg.CertificateOptions{
			EnableOwnerRef:                           *ownerRef,
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
		SchedulerOptions: controllerpkg.SchedulerOptions{MaxConcurrentChallenges: 60},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		fail("build the controller context: %v", err)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*controllers, ",") {
		want[strings.TrimSpace(c)] = true
	}
	known := controllerpkg.Known()
	names := make([]string, 0, len(known))
	for n := range known {
		if want["*"] || want[n] {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var run []controllerpkg.Interface
	for _, n := range names {
		iface, err := known[n](factory)
		if err != nil {
			fail("controller %s: %v", n, err)
		}
		run = append(run, iface)
	}
	base, err := factory.Build()
	if err != nil {
		fail("build the base context: %v", err)
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if base.GatewaySolverEnabled {
		base.GWShared.Start(ctx.Done())
	}

	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }
	mux.HandleFunc("/livez", ok)
	mux.HandleFunc("/healthz", ok)
	srv := &http.Server{Addr: *healthz, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			log.Error(err, "healthz server")
		}
	}()

	log.Info("starting controllers", "controllers", names)
	var wg sync.WaitGroup
	for i, c := range run {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(*workers, ctx); err != nil {
				log.Error(err, "controller stopped", "controller", names[i])
				cancel()
			}
		}()
	}
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	wg.Wait()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cert-manager controller: "+format+"\n", args...)
	os.Exit(1)
}
