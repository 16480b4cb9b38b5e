package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
)

// Metrics are the operator's own Prometheus metrics (controller-runtime adds
// its reconcile and work-queue metrics to the same registry).
type Metrics struct {
	events        *prometheus.CounterVec
	checkFailures *prometheus.CounterVec
	checkLatency  *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_events_total",
			Help: "Operator events by reason (Failover, Switchover, Promoted, RollingRestart, ConfigApplied, ...).",
		}, []string{"namespace", "cluster", "reason"}),
		checkFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "valkey_operator_health_check_failures_total",
			Help: "Failed PING health checks.",
		}, []string{"namespace", "cluster"}),
		checkLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "valkey_operator_health_check_seconds",
			Help:    "Latency of successful PING health checks.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"namespace", "cluster"}),
	}
	for _, c := range []prometheus.Collector{m.events, m.checkFailures, m.checkLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) event(key types.NamespacedName, reason string) {
	m.events.WithLabelValues(key.Namespace, key.Name, reason).Inc()
}

func (m *Metrics) observeCheck(key types.NamespacedName, c failover.Check) {
	if c.OK {
		m.checkLatency.WithLabelValues(key.Namespace, key.Name).Observe(c.Latency.Seconds())
		return
	}
	m.checkFailures.WithLabelValues(key.Namespace, key.Name).Inc()
}
