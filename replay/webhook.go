package replay

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WebhookSettle bounds how long an apply is retried while the API server
// cannot call an admission webhook.
const WebhookSettle = time.Minute

// FixtureSettle bounds the same retries for the fixtures of a test namespace,
// which the first session applies right after the operator's install: on a
// loaded machine cert-manager's CA injection took more than a minute
// (cert-manager seed 3 died on its first fixture; nothing is judged yet, so
// waiting longer costs no verdict).
const FixtureSettle = 3 * time.Minute

// IsWebhookUnreachable reports whether err is the API server's failure to call
// an admission webhook (not reachable yet, or its serving certificate not yet
// trusted: a CA injector has not written the webhook configuration's caBundle),
// as opposed to a webhook's refusal of the object.
func IsWebhookUnreachable(err error) bool {
	return err != nil && strings.Contains(err.Error(), "failed calling webhook")
}

// RetryWebhook runs apply, and runs it again (poll's interval) for up to
// settle while it fails because an admission webhook cannot be called: right
// after an operator's install its webhook serves before its CA bundle is
// injected (cert-manager's cainjector). Any other error returns at once.
func RetryWebhook(ctx context.Context, settle time.Duration, apply func() error) error {
	var last error
	err := Poll(ctx, settle, func() (bool, error) {
		last = apply()
		if last != nil && !IsWebhookUnreachable(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// ApplyThroughWebhook applies obj in ns, again while an admission webhook cannot be
// called (RetryWebhook), for up to settle; when it still cannot be called the error
// says what stands in the way (webhookDiagnosis).
func (k *Kube) ApplyThroughWebhook(ctx context.Context, settle time.Duration, obj map[string]any, ns string) error {
	err := RetryWebhook(ctx, settle, func() error { return k.Apply(ctx, obj, ns) })
	if IsWebhookUnreachable(err) && ctx.Err() == nil {
		return fmt.Errorf("%w (still failing after %s; %s)", err, settle, k.webhookDiagnosis(ctx))
	}
	return err
}

// webhookDiagnosis describes, for an error report, what stands between the API
// server and the admission webhooks: each webhook's CA bundle (absent until a
// CA injector writes it; otherwise the subject and validity of the CA it
// holds), and the restarts and readiness of the operator's pods. Best effort:
// what cannot be read is left out.
func (k *Kube) webhookDiagnosis(ctx context.Context) string {
	var parts []string
	describe := func(kind, config, hook string, ca []byte) {
		parts = append(parts, fmt.Sprintf("%s %s webhook %s: %s", kind, config, hook, caSummary(ca)))
	}
	if l, err := k.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range l.Items {
			for _, w := range c.Webhooks {
				describe("ValidatingWebhookConfiguration", c.Name, w.Name, w.ClientConfig.CABundle)
			}
		}
	}
	if l, err := k.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{}); err == nil {
		for _, c := range l.Items {
			for _, w := range c.Webhooks {
				describe("MutatingWebhookConfiguration", c.Name, w.Name, w.ClientConfig.CABundle)
			}
		}
	}
	if k.opNS != "" {
		if l, err := k.cs.CoreV1().Pods(k.opNS).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range l.Items {
				var restarts int32
				ready := 0
				for _, cs := range p.Status.ContainerStatuses {
					restarts += cs.RestartCount
					if cs.Ready {
						ready++
					}
				}
				parts = append(parts, fmt.Sprintf("pod %s/%s: %s, %d/%d containers ready, %d restarts", p.Namespace, p.Name, p.Status.Phase, ready, len(p.Spec.Containers), restarts))
			}
		}
	}
	return strings.Join(parts, "; ")
}

// caSummary describes a webhook's PEM CA bundle.
func caSummary(bundle []byte) string {
	if len(bundle) == 0 {
		return "no caBundle (its CA injector has not written one)"
	}
	var certs []string
	for rest := bundle; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			certs = append(certs, "an unparsable certificate")
			continue
		}
		certs = append(certs, fmt.Sprintf("CA %q valid from %s, serial %s", c.Subject.String(), c.NotBefore.UTC().Format(time.RFC3339), c.SerialNumber))
	}
	if len(certs) == 0 {
		return fmt.Sprintf("a caBundle of %d bytes holding no PEM certificate", len(bundle))
	}
	return "caBundle with " + strings.Join(certs, ", ")
}
