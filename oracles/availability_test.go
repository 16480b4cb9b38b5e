package oracles

import (
	"math"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// op is a request of a hand-written history, starting ms after t0 and lasting 5 ms.
func op(kind model.OpKind, key string, ms int, ok bool) model.Op {
	o := model.Op{Kind: kind, Key: key, Value: "v-" + key, Start: at(ms), End: at(ms + 5), OK: ok, Target: "10.244.2.7:6379"}
	if !ok {
		o.Err = "dial tcp 10.244.2.7:6379: connect: connection refused"
	} else if kind == model.OpWrite {
		o.Acks = 1
	}
	return o
}

func TestAvailabilityFigure(t *testing.T) {
	st := step(model.StepApply) // t0 to t0+40s
	h := &model.History{Workload: "kv", Required: 1, Ops: []model.Op{
		op(model.OpWrite, "before", -10, false), // before the step: left out
		op(model.OpWrite, "a", 0, true),         // at the start: in
		op(model.OpRead, "a", 100, true),
		op(model.OpWrite, "b", 200, false),
		op(model.OpWrite, "c", 300, true),
		op(model.OpVerify, "a", 40_500, true), // read-backs are not requests
		op(model.OpWrite, "after", 40_001, false),
	}}
	cases := []struct {
		name string
		tr   *model.Transition
		rate float64
		n    int
	}{
		{"window", &model.Transition{Step: st, History: h}, 0.75, 4},
		{"timed out: up to the snapshot", &model.Transition{
			Step:    &model.Step{Kind: model.StepApply, Started: t0, TimedOut: true},
			Curr:    &model.Snapshot{Taken: at(50_000)},
			History: h,
		}, 0.6, 5},
		{"a fault held past convergence extends the window", &model.Transition{
			Step:    &model.Step{Kind: model.StepApply, Started: t0, Converged: at(150), Faults: []model.Fault{{Kind: "partition", Injected: t0, Removed: at(40_001)}}},
			History: h,
		}, 0.6, 5},
		{"no history", &model.Transition{Step: st}, 0, 0},
		{"no request", &model.Transition{Step: st, History: &model.History{Required: 1}}, 0, 0},
		{"nil", nil, 0, 0},
	}
	for _, c := range cases {
		rate, n := Availability(c.tr)
		if n != c.n || math.Abs(rate-c.rate) > 1e-9 {
			t.Errorf("%s: Availability = %v, %d; want %v, %d", c.name, rate, n, c.rate, c.n)
		}
	}
	// The recorded failover: a 1 s freeze of the primary in a 4.3 s step.
	rate, n := Availability(recorded(t, "clean-failover"))
	if n != 290 || rate < 0.76 || rate > 0.77 {
		t.Errorf("clean-failover: Availability = %v, %d; want about 0.766 of 290", rate, n)
	}
}

func TestAvailability(t *testing.T) {
	planned := func(t *testing.T, tr *model.Transition) { tr.Step.Kind, tr.Step.Faults = model.StepApply, nil }
	runFixtureCases(t, "availability", func(c Config) Oracle { return NewAvailability(c) }, []fixtureCase{
		{
			// A careful rolling restart with a switchover: 96.6%.
			name: "planned-above-default", fixture: "rolling-restart",
		},
		{
			name: "planned-below-configured", fixture: "rolling-restart", cfg: Config{MinAvailability: 0.99},
			want: expectation{n: 1, contains: []string{"availability 96.6% during apply changing spec.image, below 99.0% for a planned apply"}},
		},
		{
			// The failover's outage, as if the operator had caused it on a planned
			// change: above the default 50% (one switchover is what a roll costs).
			name: "planned-above-default", fixture: "clean-failover", edit: planned,
		},
		{
			name: "planned-below-eighty", fixture: "clean-failover", cfg: Config{MinAvailability: 0.8}, edit: planned,
			want: expectation{n: 1, contains: []string{"availability 76.6% during apply, below 80.0% for a planned apply: 68 of 290 requests failed"}},
		},
		{
			name: "planned-never", fixture: "clean-failover", cfg: Config{MinAvailability: -1}, edit: planned,
		},
		{
			// A single server promises no replica: its planned restart is an outage by design.
			name: "planned-single-server", fixture: "clean-failover", cfg: Config{MinAvailability: 0.9},
			edit: func(t *testing.T, tr *model.Transition) { planned(t, tr); tr.History.Required = 0 },
		},
		{
			// Under fault the rate is recorded, not judged, by default.
			name: "fault-default-never", fixture: "clean-failover",
		},
		{
			name: "fault-below-configured", fixture: "clean-failover", cfg: Config{MinAvailabilityUnderFault: 0.9},
			want: expectation{n: 1, contains: []string{"availability 76.6% during fault, below 90.0% under fault (pod-failure)"}},
		},
		{
			name: "fault-above-configured", fixture: "clean-failover", cfg: Config{MinAvailabilityUnderFault: 0.5},
		},
		{
			// Faults the back end could not inject do not make a fault step, and
			// a fault step without faults is not a planned operation.
			name: "unsupported-fault", fixture: "clean-failover", cfg: Config{MinAvailabilityUnderFault: 0.9},
			edit: func(t *testing.T, tr *model.Transition) { tr.Step.Faults[0].Unsupported = "not on this back end" },
		},
		{
			name: "fewer-than-10-requests", fixture: "clean-failover", edit: func(t *testing.T, tr *model.Transition) {
				planned(t, tr)
				var ops []model.Op
				for _, o := range tr.History.Ops {
					if !o.OK && len(ops) < MinAvailabilityRequests-1 {
						ops = append(ops, o)
					}
				}
				tr.History.Ops = ops
			},
		},
		{
			name: "ten-requests", fixture: "clean-failover", edit: func(t *testing.T, tr *model.Transition) {
				planned(t, tr)
				var ops []model.Op
				for _, o := range tr.History.Ops {
					if !o.OK && len(ops) < MinAvailabilityRequests {
						ops = append(ops, o)
					}
				}
				tr.History.Ops = ops
			},
			want: expectation{n: 1, contains: []string{"availability 0.0% during apply"}},
		},
		{
			name: "seed-not-judged", fixture: "clean-failover",
			edit: func(t *testing.T, tr *model.Transition) { tr.Step.Kind, tr.Step.Faults = model.StepSeed, nil },
		},
		{
			name: "no-history", fixture: "clean-failover", edit: func(t *testing.T, tr *model.Transition) { planned(t, tr); tr.History = nil },
		},
	})
}

func TestLongestOutage(t *testing.T) {
	ops := []model.Op{
		op(model.OpWrite, "a", 0, false), op(model.OpWrite, "b", 10, false), op(model.OpWrite, "c", 20, true),
		op(model.OpWrite, "d", 30, false), op(model.OpWrite, "e", 40, false), op(model.OpWrite, "f", 50, false),
	}
	o := longestOutage(ops)
	if o.n != 3 || !o.from.Equal(at(30)) || o.to.Sub(o.from) != 25*time.Millisecond {
		t.Errorf("longestOutage = %+v, want 3 requests from +30ms lasting 25ms", o)
	}
}

// A custom resource deleted and created again is a planned total outage:
// Recreated tells it from the CR's UID.
func TestRecreated(t *testing.T) {
	snap := func(uid string) *model.Snapshot {
		return &model.Snapshot{CR: "cr", Objects: map[string]model.Object{"cr": {"metadata": map[string]any{"uid": uid}}}}
	}
	if !Recreated(&model.Transition{Prev: snap("a"), Curr: snap("b")}) {
		t.Error("a new UID is a re-creation")
	}
	if Recreated(&model.Transition{Prev: snap("a"), Curr: snap("a")}) || Recreated(&model.Transition{Prev: nil, Curr: snap("a")}) ||
		Recreated(&model.Transition{Prev: snap(""), Curr: snap("a")}) {
		t.Error("the same UID, or none known, is not a re-creation")
	}
}
