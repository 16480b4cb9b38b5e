package controller

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gauntlet-dev/gauntlet/internal/testenv"
	"github.com/gauntlet-dev/gauntlet/internal/testing/valkeytest"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// TestMonitorDetectsDownAndRecovery checks a real server: PINGs succeed, then
// the server is killed and the cluster's reconcile is triggered once the pod is
// subjectively down; a new server at the address is reported up again.
func TestMonitorDetectsDownAndRecovery(t *testing.T) {
	if _, err := valkeytest.Binary(); err != nil {
		testenv.Unavailable(t, "%v", err)
	}
	dir := t.TempDir()
	s, err := valkeytest.Start(context.Background(), valkeytest.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	pool := valkey.NewPool()
	defer pool.Close()
	m := NewMonitor(pool, logr.Discard(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Start(ctx) }()
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	cfg := ProbeConfig{Interval: 100 * time.Millisecond, Timeout: 100 * time.Millisecond, DownAfter: 400 * time.Millisecond}
	m.Track(key, []Target{{Pod: "c-0", Endpoint: valkey.Endpoint{Addr: s.Addr}}}, cfg)

	waitHealth := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if ok() {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("timed out: %s (health %+v)", what, m.Snapshot(key))
	}
	waitHealth("healthy", func() bool { h := m.Snapshot(key)["c-0"]; return h.Healthy() && h.Latency > 0 })

	s.Stop()
	killed := time.Now()
	select {
	case ev := <-m.events:
		if ev.Object.GetName() != "c" || ev.Object.GetNamespace() != "ns" {
			t.Fatalf("event for %s/%s", ev.Object.GetNamespace(), ev.Object.GetName())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no reconcile triggered after the pod went down")
	}
	if d := time.Since(killed); d < cfg.DownAfter-cfg.Interval {
		t.Fatalf("reported down after %s, before downAfter %s", d, cfg.DownAfter)
	}
	h := m.Snapshot(key)["c-0"]
	if !h.SubjectivelyDown(time.Now(), cfg.DownAfter) || h.ConsecutiveFailures == 0 || h.LastError == "" {
		t.Fatalf("health after the kill: %+v", h)
	}

	// Forget stops everything for the cluster.
	m.Forget(key)
	if len(m.Snapshot(key)) != 0 {
		t.Fatal("Forget kept the health")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAlive(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, true},
		{&valkey.ServerError{Msg: "LOADING Redis is loading the dataset in memory"}, true},
		{context.DeadlineExceeded, false},
	} {
		if got := alive(tc.err); got != tc.want {
			t.Errorf("alive(%v) = %v", tc.err, got)
		}
	}
}
