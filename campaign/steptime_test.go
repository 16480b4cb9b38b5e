package campaign

import (
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/replay"
)

func TestSplitPhases(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	timing := Timing{SystemSettle: 100, Snapshot: 300, Stability: 2000, Oracles: 50, Journal: 5, Overhead: 300 + 50 + 5 + 20}
	for _, tc := range []struct {
		name string
		m    stepMoments
		kind model.StepKind
		want model.StepTime
	}{
		{"converged apply", stepMoments{began: t0, waitBegan: at(200), firstChange: at(700), converged: at(5700), driven: at(8700), end: at(11400), monitors: 120 * time.Millisecond},
			model.StepApply, model.StepTime{model.PhaseApply: 200, model.PhaseReaction: 500, model.PhaseConverge: 5000, model.PhaseQuiet: 3000,
				model.PhaseSettle: 100, model.PhaseSnapshot: 180, model.PhaseMonitors: 120, model.PhaseStability: 2000, model.PhaseOracles: 50,
				model.PhaseRecord: 25, model.PhaseOther: 11400 - 8700 - 100 - 300 - 2000 - 50 - 25}},
		// A fault step: the hold until the wait began; no change seen (converged
		// clamps to the wait's start: the whole wait was the quiet window).
		{"fault without a change", stepMoments{began: t0, waitBegan: at(8000), converged: at(10), driven: at(11000), end: at(11000)},
			model.StepFault, model.StepTime{model.PhaseFaultHold: 8000, model.PhaseQuiet: 3000}},
		// Timed out: no convergence time, the whole wait after the first change converging.
		{"timed out", stepMoments{began: t0, waitBegan: at(100), firstChange: at(400), driven: at(60100), end: at(60100)},
			model.StepApply, model.StepTime{model.PhaseApply: 100, model.PhaseReaction: 300, model.PhaseConverge: 59700}},
		// Refused by the API server: no wait at all.
		{"refused", stepMoments{began: t0, driven: at(150), end: at(150)}, model.StepApply, model.StepTime{model.PhaseApply: 150}},
	} {
		tm := timing
		if tc.name != "converged apply" {
			tm = Timing{}
		}
		got := splitPhases(tc.m, tc.kind, tm)
		if len(got) != len(tc.want) {
			t.Errorf("%s: phases %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: phase %s = %d ms, want %d (all: %v)", tc.name, k, got[k], v, got)
			}
		}
		if got.Total() != tc.m.end.Sub(tc.m.began) {
			t.Errorf("%s: phases add up to %s, the step took %s", tc.name, got.Total(), tc.m.end.Sub(tc.m.began))
		}
	}
}

func TestStepClockFirstChange(t *testing.T) {
	q := replay.NewQuietTracker(time.Now())
	c := newStepClock(time.Now())
	c.waiting(q)
	time.Sleep(20 * time.Millisecond)
	q.Touch(time.Now())
	time.Sleep(5 * time.Millisecond)
	q.Touch(time.Now())
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		fc, wb := c.firstChange, c.waitBegan
		c.mu.Unlock()
		if !fc.IsZero() {
			if fc.Sub(wb) < 20*time.Millisecond {
				t.Errorf("first change noted %s after the wait began; it came after 20ms", fc.Sub(wb))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the clock did not note the first change")
		}
		time.Sleep(time.Millisecond)
	}
	c.stop()
	c.stop() // twice is fine
	var nilClock *stepClock
	nilClock.waiting(q)
	nilClock.drove()
	if nilClock.phases(model.StepApply, Timing{}, time.Time{}, time.Now()) != nil {
		t.Error("a nil clock returned phases")
	}
}
