package replay

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "cert-manager-webhook-ca"},
		NotBefore: time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), NotAfter: time.Date(2027, 11, 27, 3, 0, 0, 0, time.UTC), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestWebhookDiagnosis(t *testing.T) {
	ca := testCA(t)
	cs := fake.NewClientset(
		&admissionv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
			Webhooks: []admissionv1.ValidatingWebhook{{Name: "webhook.cert-manager.io"}}},
		&admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
			Webhooks: []admissionv1.MutatingWebhook{{Name: "webhook.cert-manager.io", ClientConfig: admissionv1.WebhookClientConfig{CABundle: ca}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "cert-manager", Name: "cainjector-1"},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: 3}}}},
	)
	k := &Kube{cs: cs, opNS: "cert-manager"}
	got := k.webhookDiagnosis(context.Background())
	for _, want := range []string{
		"ValidatingWebhookConfiguration cm webhook webhook.cert-manager.io: no caBundle (its CA injector has not written one)",
		`MutatingWebhookConfiguration cm webhook webhook.cert-manager.io: caBundle with CA "CN=cert-manager-webhook-ca" valid from 2026-11-27T03:00:00Z, serial 7`,
		"pod cert-manager/cainjector-1: Running, 0/1 containers ready, 3 restarts",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diagnosis lacks %q:\n%s", want, got)
		}
	}
	if s := caSummary([]byte("junk")); !strings.Contains(s, "holding no PEM certificate") {
		t.Errorf("junk bundle: %q", s)
	}
}
