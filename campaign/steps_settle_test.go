package campaign

import (
	"context"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/monitors"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// steadyMonitor reads the same system every time (the primary p0).
type steadyMonitor struct{}

func (steadyMonitor) Name() string { return "steady" }
func (steadyMonitor) Sample(context.Context, monitors.Env) (*model.SystemSample, error) {
	return &model.SystemSample{Taken: time.Now(), Members: []model.Member{{Pod: "p0", Role: model.RolePrimary, Reachable: true}}}, nil
}

// TestSettleFromStepSamples: the system readings the step took after the
// objects' last change count towards the system's quiet window, so a system
// that kept its state through the objects' quiet window settles at the first
// fresh reading; readings from before the last change, or a change among the
// readings less than the window ago, leave the window to be waited.
func TestSettleFromStepSamples(t *testing.T) {
	const quiet = 1500 * time.Millisecond
	steady := func(at time.Time) model.SystemSample {
		return model.SystemSample{Taken: at, Members: []model.Member{{Pod: "p0", Role: model.RolePrimary, Reachable: true}}}
	}
	other := func(at time.Time) model.SystemSample {
		return model.SystemSample{Taken: at, Members: []model.Member{{Pod: "p1", Role: model.RolePrimary, Reachable: true}}}
	}
	cases := []struct {
		name string
		// prior builds the step's readings; the objects' last change was at c,
		// the quiet window ended at c+3 s (now).
		prior func(c time.Time) []model.SystemSample
		wait  bool // the system's quiet window is waited anew (or partly)
	}{
		{"none", func(time.Time) []model.SystemSample { return nil }, true},
		{"steady since the last change", func(c time.Time) []model.SystemSample {
			var out []model.SystemSample
			for at := c; at.Before(c.Add(3 * time.Second)); at = at.Add(sampleEvery) {
				out = append(out, steady(at))
			}
			return out
		}, false},
		{"steady, but only before the last change", func(c time.Time) []model.SystemSample {
			return []model.SystemSample{steady(c.Add(-3 * time.Second)), steady(c.Add(-time.Second))}
		}, true},
		{"changed 1 s ago", func(c time.Time) []model.SystemSample {
			return []model.SystemSample{other(c), other(c.Add(time.Second)), steady(c.Add(2 * time.Second)), steady(c.Add(2500 * time.Millisecond))}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, inBubble(func(t *testing.T) {
			c := time.Now()
			prior := tc.prior(c)
			time.Sleep(3 * time.Second)
			r := &runner{cfg: Config{}.withDefaults(), target: &targets.Target{SystemMonitor: steadyMonitor{}}}
			s := &session{r: r, env: &env{kube: &kube{}}, ns: "n"}
			begin := time.Now()
			smp, settled := s.settleSystem(context.Background(), model.Object{}, quiet, time.Minute, prior, c)
			if !settled || smp == nil || smp.Members[0].Pod != "p0" {
				t.Fatalf("settled %v, sample %+v", settled, smp)
			}
			if took := time.Since(begin); tc.wait != (took > 0) {
				t.Errorf("settling took %s; want a wait: %v", took, tc.wait)
			}
			if !smp.Taken.After(c.Add(3*time.Second)) && !smp.Taken.Equal(begin) {
				t.Errorf("the settled reading was taken at %s, not fresh", smp.Taken)
			}
		}))
	}
}
