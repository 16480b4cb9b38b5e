package reports

import (
	"math"
	"sort"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TimeBreakdown is where a campaign's time went: its steps' wall time per
// phase (model.StepTime) and per step kind, summed over the steps (with
// several workers the sums exceed the wall-clock time), and the campaign's
// own stages. Absent from a summary whose steps recorded no phases.
type TimeBreakdown struct {
	// Steps is the steps' wall time summed; Phases and Kinds each add up to it.
	Steps Duration `json:"stepsSeconds"`
	// Phases is the time per phase, in the order a step runs them.
	Phases []TimeShare `json:"phases"`
	// Kinds is the time per step kind (seed, apply, recreate, rollback, fault,
	// differential), largest first.
	Kinds []TimeShare `json:"kinds"`
	// Setup is creating the clusters and deploying the operator (wall time).
	Setup Duration `json:"setupSeconds"`
	// Backoff is how long iterations waited for a saturated host, summed over
	// the workers (BackoffWaits of them).
	Backoff      Duration `json:"backoffSeconds,omitempty"`
	BackoffWaits int      `json:"backoffWaits,omitempty"`
	// BudgetUnused is what was left of the budget when the campaign finished
	// (absent without a budget).
	BudgetUnused Duration `json:"budgetUnusedSeconds,omitempty"`
}

// TimeShare is the time spent in one phase or step kind.
type TimeShare struct {
	Name  string   `json:"name"`
	Total Duration `json:"seconds"`
	// Steps counts the steps that spent time in it.
	Steps int `json:"steps"`
	// Share is Total over TimeBreakdown.Steps, 0..1 to three decimals.
	Share float64 `json:"share"`
}

// CampaignTime is the campaign-level time Build adds to the steps' phases.
type CampaignTime struct {
	Setup        time.Duration
	Backoff      time.Duration
	BackoffWaits int
}

// buildTime sums the steps' phases and kinds; nil when no step recorded phases.
func buildTime(in BuildInput) *TimeBreakdown {
	phases, kinds := map[string]time.Duration{}, map[string]time.Duration{}
	phaseSteps, kindSteps := map[string]int{}, map[string]int{}
	var total time.Duration
	for _, r := range in.Steps {
		if len(r.Step.Time) == 0 {
			continue
		}
		for p, ms := range r.Step.Time {
			phases[p] += time.Duration(ms) * time.Millisecond
			phaseSteps[p]++
		}
		d := r.Step.Time.Total()
		kinds[string(r.Step.Kind)] += d
		kindSteps[string(r.Step.Kind)]++
		total += d
	}
	if total == 0 {
		return nil
	}
	t := &TimeBreakdown{Steps: Duration(total), Setup: Duration(in.Time.Setup), Backoff: Duration(in.Time.Backoff), BackoffWaits: in.Time.BackoffWaits}
	share := func(d time.Duration) float64 { return math.Round(float64(d)/float64(total)*1000) / 1000 }
	order := map[string]int{}
	for i, p := range model.StepPhases {
		order[p] = i
	}
	for p, d := range phases {
		t.Phases = append(t.Phases, TimeShare{Name: p, Total: Duration(d), Steps: phaseSteps[p], Share: share(d)})
	}
	sort.Slice(t.Phases, func(i, j int) bool {
		oi, ki := order[t.Phases[i].Name]
		oj, kj := order[t.Phases[j].Name]
		if ki != kj {
			return ki // known phases first
		}
		if oi != oj {
			return oi < oj
		}
		return t.Phases[i].Name < t.Phases[j].Name
	})
	for k, d := range kinds {
		t.Kinds = append(t.Kinds, TimeShare{Name: k, Total: Duration(d), Steps: kindSteps[k], Share: share(d)})
	}
	sort.Slice(t.Kinds, func(i, j int) bool {
		if t.Kinds[i].Total != t.Kinds[j].Total {
			return t.Kinds[i].Total > t.Kinds[j].Total
		}
		return t.Kinds[i].Name < t.Kinds[j].Name
	})
	if in.Budget > 0 && !in.Finished.IsZero() {
		if left := in.Budget - in.Finished.Sub(in.Started); left > 0 {
			t.BudgetUnused = Duration(left)
		}
	}
	return t
}
