package view_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkViewLatency measures what the proxy adds to a request in
// pass-through mode: each iteration gets one small ConfigMap straight from
// the embedded API server and once through the proxy (same service account,
// same kind of client, alternating), and reports both sides' median and p99
// and the differences, in microseconds. The bundled operator runs behind the
// same proxy meanwhile, as in a campaign.
func BenchmarkViewLatency(b *testing.B) {
	setup(b)
	ctx := context.Background()
	ns := "view-bench"
	if err := env.k.CreateNamespace(ctx, ns); err != nil {
		b.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bench"}, Data: map[string]string{"k": "v"}}
	if _, err := env.k.Clientset().CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	direct, err := kubernetes.NewForConfig(env.directCfg)
	if err != nil {
		b.Fatal(err)
	}
	proxied, err := kubernetes.NewForConfig(env.proxyCfg)
	if err != nil {
		b.Fatal(err)
	}
	get := func(cs *kubernetes.Clientset) time.Duration {
		t0 := time.Now()
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "bench", metav1.GetOptions{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}
	get(direct) // connections made before timing
	get(proxied)
	var d, p []time.Duration
	b.ResetTimer()
	for b.Loop() {
		d = append(d, get(direct))
		p = append(p, get(proxied))
	}
	b.StopTimer()
	dm, d99 := quantiles(d)
	pm, p99 := quantiles(p)
	b.ReportMetric(dm, "direct-p50-µs")
	b.ReportMetric(d99, "direct-p99-µs")
	b.ReportMetric(pm, "proxy-p50-µs")
	b.ReportMetric(p99, "proxy-p99-µs")
	b.ReportMetric(pm-dm, "added-p50-µs")
	b.ReportMetric(p99-d99, "added-p99-µs")
}

// quantiles are the median and 99th percentile of ds, in microseconds.
func quantiles(ds []time.Duration) (p50, p99 float64) {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) float64 {
		return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds())
	}
	return at(0.5), at(0.99)
}
