package replay

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestWaitConverged drives WaitConverged with a quiet tracker touched on a
// schedule and a fixed object set: convergence is reported at the last change
// (not when the quiet window ends), a system that is quiet but not ready
// settles with its problems listed, one that keeps changing times out, and a
// lagging generation keeps it waiting until the timeout.
func TestWaitConverged(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	pod := model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: "a-0"}.String()
	readyPod := model.Object{"status": map[string]any{"phase": "Running", "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}
	pendingPod := model.Object{"status": map[string]any{"phase": "Pending"}}
	crAt := func(gen, observed int64) model.Object {
		return model.Object{"metadata": map[string]any{"generation": gen}, "status": map[string]any{"observedGeneration": observed}}
	}
	opts := ConvergeOptions{Quiet: 150 * time.Millisecond, Settle: 400 * time.Millisecond, Timeout: 1500 * time.Millisecond}
	tests := []struct {
		name         string
		touches      []time.Duration // changes after start
		objs         map[string]model.Object
		wantErr      error
		wantNotReady bool
		minElapsed   time.Duration // the call must not return before this
	}{
		{"quiet and ready", []time.Duration{50 * time.Millisecond, 100 * time.Millisecond}, map[string]model.Object{pod: readyPod, cr: crAt(2, 2)}, nil, false, 250 * time.Millisecond},
		{"settles not ready", nil, map[string]model.Object{pod: pendingPod, cr: crAt(2, 2)}, nil, true, 400 * time.Millisecond},
		{"keeps changing", everyUntil(100*time.Millisecond, 2*time.Second), map[string]model.Object{pod: readyPod}, ErrConvergenceTimeout, false, 1500 * time.Millisecond},
		{"generation lags", nil, map[string]model.Object{pod: readyPod, cr: crAt(3, 2)}, ErrConvergenceTimeout, true, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, inBubble(func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			q := NewQuietTracker(start)
			var lastTouch time.Time
			done := make(chan struct{})
			go func() {
				defer close(done)
				touchAt(ctx, q, start, tt.touches)
			}()
			if len(tt.touches) > 0 && tt.touches[len(tt.touches)-1] < time.Second {
				lastTouch = start.Add(tt.touches[len(tt.touches)-1])
			}
			at, notReady, err := WaitConverged(ctx, opts, q, start, func() (map[string]model.Object, string) { return tt.objs, cr }, nil, false)
			elapsed := time.Since(start)
			cancel()
			<-done
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if (len(notReady) > 0) != tt.wantNotReady {
				t.Errorf("not ready = %v, want problems: %v", notReady, tt.wantNotReady)
			}
			if elapsed < tt.minElapsed {
				t.Errorf("returned after %s, before %s", elapsed, tt.minElapsed)
			}
			if tt.wantErr != nil {
				if !at.IsZero() {
					t.Errorf("a timeout reports convergence at %v", at)
				}
				return
			}
			if !lastTouch.IsZero() && (at.Before(lastTouch) || at.Sub(lastTouch) > 30*time.Millisecond) {
				t.Errorf("Converged at +%s, want the last change at +%s", at.Sub(start), lastTouch.Sub(start))
			}
			if lastTouch.IsZero() && !at.Equal(start) {
				t.Errorf("nothing changed: Converged at +%s, want the start", at.Sub(start))
			}
		}))
	}
	t.Run("cancelled", inBubble(func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start := time.Now()
		_, _, err := WaitConverged(ctx, opts, NewQuietTracker(start), start, func() (map[string]model.Object, string) { return nil, cr }, nil, false)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	}))
}

// inBubble runs a test in a synctest bubble: its clock advances only when
// every goroutine of the test waits, so schedules of changes against quiet and
// stuck windows hold exactly however loaded the machine is (a 100 ms change
// stream against a 150 ms quiet window failed under load with the real clock).
func inBubble(f func(t *testing.T)) func(t *testing.T) {
	return func(t *testing.T) { synctest.Test(t, f) }
}

func everyUntil(step, end time.Duration) []time.Duration {
	var out []time.Duration
	for d := step; d < end; d += step {
		out = append(out, d)
	}
	return out
}

// TestWaitConvergedStuck: a step that keeps changing without progress (a crash
// loop's restarts) or whose CR never reports its generation ends as stuck after
// the stuck window, long before the hard timeout; one whose readiness keeps
// improving is not stuck and converges.
func TestWaitConvergedStuck(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	podKey := func(i int) string {
		return model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: fmt.Sprintf("a-%d", i)}.String()
	}
	pod := func(ready bool, restarts int) model.Object {
		st := "False"
		if ready {
			st = "True"
		}
		return model.Object{"metadata": map[string]any{"uid": "u"}, "status": map[string]any{"phase": "Running",
			"conditions":        []any{map[string]any{"type": "Ready", "status": st}},
			"containerStatuses": []any{map[string]any{"restartCount": int64(restarts)}}}}
	}
	crAt := func(gen, observed int64) model.Object {
		return model.Object{"metadata": map[string]any{"generation": gen}, "status": map[string]any{"observedGeneration": observed}}
	}
	// The hard timeout is far: reaching it instead of ErrStuck fails the test.
	opts := ConvergeOptions{Quiet: 150 * time.Millisecond, Settle: 30 * time.Second, Timeout: 20 * time.Second, Stuck: 600 * time.Millisecond}
	tests := []struct {
		name    string
		touches []time.Duration
		objs    func(elapsed time.Duration) map[string]model.Object
		// operatorDown lists the operator's pods not ready (nil: none known).
		operatorDown func(elapsed time.Duration) []string
		wantErr      error
	}{
		{"crash loop", everyUntil(100*time.Millisecond, 30*time.Second), func(e time.Duration) map[string]model.Object {
			return map[string]model.Object{podKey(0): pod(false, int(e/(100*time.Millisecond))), cr: crAt(2, 2)}
		}, nil, ErrStuck},
		{"generation never observed", nil, func(time.Duration) map[string]model.Object {
			return map[string]model.Object{podKey(0): pod(true, 0), cr: crAt(3, 2)}
		}, nil, ErrStuck},
		// The operator waits in the kubelet's crash back-off for longer than
		// the stuck window, then comes back and finishes: not stuck.
		{"operator in crash back-off", nil, func(e time.Duration) map[string]model.Object {
			return map[string]model.Object{podKey(0): pod(e > 1500*time.Millisecond, 0), cr: crAt(2, 2)}
		}, func(e time.Duration) []string {
			if e < 1200*time.Millisecond {
				return []string{"operator pod o/op-1: not ready (CrashLoopBackOff)"}
			}
			return nil
		}, nil},
		{"readiness improves", everyUntil(100*time.Millisecond, 1200*time.Millisecond), func(e time.Duration) map[string]model.Object {
			m := map[string]model.Object{cr: crAt(2, 2)}
			for i := range 4 {
				m[podKey(i)] = pod(time.Duration(i)*300*time.Millisecond <= e, 0)
			}
			return m
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, inBubble(func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			q := NewQuietTracker(start)
			go touchAt(ctx, q, start, tt.touches)
			var down func() []string
			if tt.operatorDown != nil {
				down = func() []string { return tt.operatorDown(time.Since(start)) }
			}
			_, notReady, err := WaitConverged(ctx, opts, q, start, func() (map[string]model.Object, string) {
				return tt.objs(time.Since(start)), cr
			}, down, false)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr != nil && len(notReady) == 0 {
				t.Errorf("a stuck step lists no readiness problem")
			}
		}))
	}
}

// TestProgressPrint: a crash loop's restart counts, container states and
// condition messages are not progress; a replaced pod, a pod becoming ready, a
// changed spec generation and a new condition reason are.
func TestProgressPrint(t *testing.T) {
	cr := model.ObjectKey{Group: "g", Version: "v1", Kind: "Foo", Namespace: "n", Name: "a"}.String()
	pk := model.ObjectKey{Version: "v1", Kind: "Pod", Namespace: "n", Name: "a-0"}.String()
	base := func() map[string]model.Object {
		return map[string]model.Object{
			pk: {"metadata": map[string]any{"uid": "u1"}, "status": map[string]any{"phase": "Running",
				"conditions":        []any{map[string]any{"type": "Ready", "status": "False", "message": "m1"}},
				"containerStatuses": []any{map[string]any{"restartCount": int64(1), "state": map[string]any{"running": map[string]any{}}}}}},
			cr: {"metadata": map[string]any{"generation": int64(2)}, "status": map[string]any{"observedGeneration": int64(2), "phase": "Updating",
				"conditions": []any{map[string]any{"type": "Ready", "status": "False", "reason": "Rolling", "message": "1 of 3"}}}},
		}
	}
	p0 := progressPrint(base(), cr, []string{"a-0: not ready"}, true)
	same := map[string]func(map[string]model.Object){
		"restart count": func(m map[string]model.Object) {
			m[pk]["status"].(map[string]any)["containerStatuses"] = []any{map[string]any{"restartCount": int64(7), "state": map[string]any{"waiting": map[string]any{"reason": "CrashLoopBackOff"}}}}
		},
		"condition message": func(m map[string]model.Object) {
			m[cr]["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "False", "reason": "Rolling", "message": "2 of 3"}}
		},
	}
	for name, f := range same {
		m := base()
		f(m)
		if progressPrint(m, cr, []string{"a-0: not ready"}, true) != p0 {
			t.Errorf("%s counted as progress", name)
		}
	}
	differ := map[string]func(map[string]model.Object){
		"pod replaced": func(m map[string]model.Object) { m[pk]["metadata"].(map[string]any)["uid"] = "u2" },
		"pod ready": func(m map[string]model.Object) {
			m[pk]["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "True"}}
		},
		"spec generation": func(m map[string]model.Object) { m[cr]["metadata"].(map[string]any)["generation"] = int64(3) },
		"condition reason": func(m map[string]model.Object) {
			m[cr]["status"].(map[string]any)["conditions"] = []any{map[string]any{"type": "Ready", "status": "False", "reason": "Failover"}}
		},
	}
	for name, f := range differ {
		m := base()
		f(m)
		if progressPrint(m, cr, []string{"a-0: not ready"}, true) == p0 {
			t.Errorf("%s not counted as progress", name)
		}
	}
	if progressPrint(base(), cr, nil, true) == p0 {
		t.Errorf("a readiness problem gone is not counted as progress")
	}
}

// touchAt touches q at each of the offsets from start (a change the tracker
// sees), until ctx ends.
func touchAt(ctx context.Context, q *QuietTracker, start time.Time, offsets []time.Duration) {
	for _, d := range offsets {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(start.Add(d))):
		}
		q.Touch(time.Now())
	}
}
