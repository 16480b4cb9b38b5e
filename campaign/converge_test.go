package campaign

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestWaitConverged drives waitConverged with a quiet tracker touched on a
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
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			q := newQuietTracker(start)
			var lastTouch time.Time
			done := make(chan struct{})
			go func() {
				defer close(done)
				for _, d := range tt.touches {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(start.Add(d))):
					}
					q.Touch(time.Now())
				}
			}()
			if len(tt.touches) > 0 && tt.touches[len(tt.touches)-1] < time.Second {
				lastTouch = start.Add(tt.touches[len(tt.touches)-1])
			}
			at, notReady, err := waitConverged(ctx, opts, q, start, func() (map[string]model.Object, string) { return tt.objs, cr }, false)
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
				t.Errorf("converged at +%s, want the last change at +%s", at.Sub(start), lastTouch.Sub(start))
			}
			if lastTouch.IsZero() && !at.Equal(start) {
				t.Errorf("nothing changed: converged at +%s, want the start", at.Sub(start))
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(50 * time.Millisecond); cancel() }()
		start := time.Now()
		_, _, err := waitConverged(ctx, opts, newQuietTracker(start), start, func() (map[string]model.Object, string) { return nil, cr }, false)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func everyUntil(step, end time.Duration) []time.Duration {
	var out []time.Duration
	for d := step; d < end; d += step {
		out = append(out, d)
	}
	return out
}
