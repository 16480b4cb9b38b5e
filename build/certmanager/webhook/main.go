// Command webhook is cert-manager's admission webhook, built by Gauntlet from
// the pinned cert-manager module (see ../controller/main.go for why Gauntlet
// writes the command itself). It validates and mutates cert-manager's
// resources with the module's admission chain and serves TLS with a
// certificate signed by a CA it keeps in a Secret (cert-manager's "dynamic"
// serving), which the cainjector copies into the webhook configurations.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/internal/apis/config/shared"
	config "github.com/cert-manager/cert-manager/internal/apis/config/webhook"
	cmwebhook "github.com/cert-manager/cert-manager/internal/webhook"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	var (
		securePort  = flag.Int("secure-port", 10250, "port of the HTTPS admission endpoints")
		healthzPort = flag.Int("healthz-port", 6080, "port of /livez and /healthz")
		secretNS    = flag.String("dynamic-serving-ca-secret-namespace", "cert-manager", "namespace of the serving CA Secret")
		secretName  = flag.String("dynamic-serving-ca-secret-name", "cert-manager-webhook-ca", "name of the serving CA Secret")
		dnsNames    = flag.String("dynamic-serving-dns-names", "cert-manager-webhook,cert-manager-webhook.cert-manager,cert-manager-webhook.cert-manager.svc", "DNS names of the serving certificate")
		metrics     = flag.String("metrics-listen-address", "0.0.0.0:9402", "metrics address")
	)
	// controller-runtime, linked in, registers --kubeconfig (empty: in-cluster config).
	klog.InitFlags(nil)
	flag.Parse()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	log := logf.Log.WithName("webhook")
	ctx = logf.NewContext(ctx, log)

	opts := config.WebhookConfiguration{
		SecurePort:  int32(*securePort),
		HealthzPort: int32(*healthzPort),
		TLSConfig: shared.TLSConfig{Dynamic: shared.DynamicServingConfig{
			SecretNamespace: *secretNS,
			SecretName:      *secretName,
			DNSNames:        strings.Split(*dnsNames, ","),
			LeafDuration:    7 * 24 * time.Hour,
		}},
		MetricsListenAddress: *metrics,
	}
	srv, err := cmwebhook.NewCertManagerWebhookServer(log, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager webhook: %v\n", err)
		os.Exit(1)
	}
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "cert-manager webhook: %v\n", err)
		os.Exit(1)
	}
}
