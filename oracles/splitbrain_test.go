package oracles

import (
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

func TestSplitBrain(t *testing.T) {
	runFixtureCases(t, "split-brain", func(c Config) Oracle { return NewSplitBrain(c) }, []fixtureCase{
		{
			// Promoted and labelled before the old primary was demoted: both
			// served writes for most of a second.
			name: "promote-before-demote", fixture: "split-brain",
			want: expectation{n: 3, contains: []string{
				"split brain: cache-0 and cache-1 reported the primary role at once, both reachable (reading taken 10:03:01.101)",
				"split brain: cache-0 and cache-1 were labelled valkey.gauntlet.dev/role=primary at once",
				"split brain: client Service cache selected cache-0 and cache-1 at once",
			}, detail: "first seen in the reading taken 10:03:01.101; seen in"},
		},
		{
			// The old primary is frozen while the replica is promoted: unreachable,
			// it does not count; thawed, its first answer still says primary with
			// its old replicas, and it is demoted at once.
			name: "frozen-old-primary", fixture: "clean-failover",
		},
		{
			name: "planned-switchover", fixture: "rolling-restart",
		},
		{
			// The frozen primary comes back to a stale replica promoted in its
			// place: a lost-write bug, but never two primaries serving.
			name: "stale-promotion", fixture: "lost-acked-write",
		},
		{
			// After convergence two primaries are the system-state oracle's
			// finding; during the step the second one, unlabelled and without
			// replicas, reaches no client.
			name: "isolated-second-primary", fixture: "two-primaries",
		},
		{
			// A timed-out step: the reading at snapshot time is judged here.
			name: "timed-out-step-judges-final-reading", fixture: "two-primaries",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.TimedOut, tr.Step.Converged = true, time.Time{}
				member(t, tr.Curr.System, "cache-2").Labels[DefaultRoleLabel] = "primary"
			},
			want: expectation{n: 2, contains: []string{
				"split brain: cache-0 and cache-2 reported the primary role at once",
				"split brain: cache-0 and cache-2 were labelled valkey.gauntlet.dev/role=primary at once (reading taken 10:03:00.603)",
			}},
		},
		{
			// Labels at snapshot time are judged even when the step converged.
			name: "labels-at-snapshot", fixture: "converged",
			edit: func(t *testing.T, tr *model.Transition) {
				member(t, tr.Curr.System, "cache-2").Labels[DefaultRoleLabel] = "primary"
			},
			want: expectation{n: 1, contains: []string{"split brain: cache-0 and cache-2 were labelled valkey.gauntlet.dev/role=primary at once"}},
		},
		{
			// min-replicas-to-write 1 in both desired states: the promoted replica,
			// with no replica of its own, refuses writes.
			name: "fenced-by-min-replicas", fixture: "split-brain",
			edit: func(t *testing.T, tr *model.Transition) {
				for _, d := range []model.Object{tr.Desired, tr.PrevDesired} {
					setIn(t, d, `spec.config["min-replicas-to-write"]`, "1")
				}
			},
			want: expectation{n: 2, contains: []string{"were labelled", "client Service cache selected"}},
		},
		{
			// A step that introduces the fence cannot count on it.
			name: "fence-introduced-by-the-step", fixture: "split-brain",
			edit: func(t *testing.T, tr *model.Transition) {
				setIn(t, tr.Desired, `spec.config["min-replicas-to-write"]`, "1")
			},
			want: expectation{n: 3, contains: []string{"reported the primary role at once"}},
		},
		{
			// The member's effective value, when read, wins over the desired one.
			name: "fence-read-from-members", fixture: "split-brain",
			edit: func(t *testing.T, tr *model.Transition) {
				for i := range tr.Samples {
					for j := range tr.Samples[i].Members {
						tr.Samples[i].Members[j].Config = map[string]string{"min-replicas-to-write": "1"}
					}
				}
			},
			want: expectation{n: 2, contains: []string{"were labelled", "client Service cache selected"}},
		},
		{
			name: "service-check-off", fixture: "split-brain", cfg: Config{DisableServiceSplitBrain: true},
			want: expectation{n: 2, contains: []string{"reported the primary role", "were labelled"}},
		},
		{
			name: "other-role-label", fixture: "split-brain", cfg: Config{RoleLabel: "example.com/role", RolePrimaryValue: "leader"},
			edit: func(t *testing.T, tr *model.Transition) {
				for i := range tr.Samples {
					for j := range tr.Samples[i].Members {
						m := &tr.Samples[i].Members[j]
						if m.Labels[DefaultRoleLabel] == "primary" {
							m.Labels["example.com/role"] = "leader"
						}
					}
				}
			},
			want: expectation{n: 3, contains: []string{"were labelled example.com/role=leader at once"}},
		},
		{
			// The reading at snapshot time also among the step's readings counts once.
			name: "final-reading-recorded-twice", fixture: "split-brain",
			edit: func(t *testing.T, tr *model.Transition) {
				tr.Step.TimedOut = true
				tr.Samples = append(tr.Samples, *cloneSample(t, tr.Curr.System))
			},
			want: expectation{n: 3, detail: "of 35 readings"},
		},
		{
			name: "no-readings", fixture: "split-brain",
			edit: func(t *testing.T, tr *model.Transition) { tr.Samples, tr.Curr.System = nil, nil },
		},
	})
}

// The readings are judged in time order whatever order they come in, and the
// finding counts them.
func TestSplitBrainReadingOrder(t *testing.T) {
	tr := recorded(t, "split-brain")
	want := run(NewSplitBrain(Config{}), tr)
	rev := recorded(t, "split-brain")
	for i, j := 0, len(rev.Samples)-1; i < j; i, j = i+1, j-1 {
		rev.Samples[i], rev.Samples[j] = rev.Samples[j], rev.Samples[i]
	}
	got := run(NewSplitBrain(Config{}), rev)
	if len(got) != len(want) || len(got) == 0 || got[0].Summary != want[0].Summary || got[0].Evidence[0].Detail != want[0].Evidence[0].Detail {
		t.Fatalf("reversed readings gave %+v, want %+v", got, want)
	}
}
