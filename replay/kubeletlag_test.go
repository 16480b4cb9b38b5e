package replay

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestSettleWaitsForKubelet: a pod the scheduler placed whose kubelet has not
// taken it up (no startTime) keeps the step from settling on the settle window
// and stops its stuck clock — the test cluster's lag, not the system settling
// (bundled operator, untuned seed 1: a killed replica's replacement Pending for
// 33 s with PodScheduled=True alone, judged after the 30 s settle window). When
// the kubelet starts it the step converges; when it never does, the hard
// timeout ends the step, not the settle or stuck window.
func TestSettleWaitsForKubelet(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	pod := model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: "a-0"}.String()
	placed := func() model.Object {
		return model.Object{"kind": "Pod", "status": map[string]any{"phase": "Pending",
			"conditions": []any{map[string]any{"type": "PodScheduled", "status": "True"}}}}
	}
	running := model.Object{"kind": "Pod", "status": map[string]any{"phase": "Running", "startTime": "2026-01-01T00:00:00Z",
		"conditions": []any{map[string]any{"type": "PodScheduled", "status": "True"}, map[string]any{"type": "Ready", "status": "True"}}}}
	crObj := model.Object{"metadata": map[string]any{"generation": int64(1)}, "status": map[string]any{"observedGeneration": int64(1)}}
	o := ConvergeOptions{Quiet: 3 * time.Second, Settle: 30 * time.Second, Timeout: 2 * time.Minute, Stuck: time.Minute}

	t.Run("kubelet starts it late", inBubble(func(t *testing.T) {
		start := time.Now()
		q := NewQuietTracker(start)
		var mu sync.Mutex
		objs := map[string]model.Object{cr: crObj, pod: placed()}
		time.AfterFunc(45*time.Second, func() {
			mu.Lock()
			objs[pod] = running
			mu.Unlock()
			q.Touch(time.Now())
		})
		_, notReady, err := WaitConverged(context.Background(), o, q, start, func() (map[string]model.Object, string) {
			mu.Lock()
			defer mu.Unlock()
			return map[string]model.Object{cr: objs[cr], pod: objs[pod]}, cr
		}, nil, true)
		if err != nil || len(notReady) > 0 {
			t.Fatalf("err %v, not ready %v: want converged once the kubelet started the pod", err, notReady)
		}
		if got := time.Since(start); got < 45*time.Second {
			t.Errorf("done after %s, before the kubelet started the pod", got)
		}
	}))
	t.Run("kubelet never starts it", inBubble(func(t *testing.T) {
		start := time.Now()
		q := NewQuietTracker(start)
		objs := map[string]model.Object{cr: crObj, pod: placed()}
		_, _, err := WaitConverged(context.Background(), o, q, start, func() (map[string]model.Object, string) { return objs, cr }, nil, true)
		if !errors.Is(err, ErrConvergenceTimeout) {
			t.Fatalf("err %v, want the hard timeout", err)
		}
	}))
	if got := awaitingKubelet(map[string]model.Object{pod: running}); got != "" {
		t.Errorf("a started pod was taken for one awaiting its kubelet: %s", got)
	}
}
