package campaign

import (
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// TestResumedRates: a campaign run 10 minutes, resumed a day later and run 5
// more counts 15 minutes of running, and its transitions per hour are every
// run's transitions over those 15 minutes.
func TestResumedRates(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	step := func(at time.Duration) Record {
		return Record{Type: RecStep, Time: t0.Add(at), Step: &StepRecord{Step: model.Step{Kind: model.StepApply}}}
	}
	first := []Record{{Type: RecStart, Time: t0, Start: &StartRecord{}}, step(time.Minute), step(10 * time.Minute)}
	if got := ActiveTime(first); got != 10*time.Minute {
		t.Errorf("one run: %v, want 10m", got)
	}
	resumed := append(append([]Record{}, first...), Record{Type: RecResume, Time: t0.Add(24 * time.Hour)}, step(24*time.Hour+3*time.Minute))
	if got := ActiveTime(resumed); got != 13*time.Minute {
		t.Errorf("resumed: %v, want 13m (the day between the runs not counted)", got)
	}
	res := &Result{}
	for range 30 {
		res.Steps = append(res.Steps, &StepRecord{})
	}
	bench(res, 5*time.Minute, ActiveTime(first))
	if res.Bench.TransitionsPerHour != 120 || res.Bench.ActiveSeconds != 900 {
		t.Errorf("bench: %v transitions/hour over %v s, want 120 over 900 s", res.Bench.TransitionsPerHour, res.Bench.ActiveSeconds)
	}
}

// TestProgressETAResumed: the ETA's rate counts the steps of this run only.
func TestProgressETAResumed(t *testing.T) {
	p := newProgress(Config{}, 100)
	p.began = time.Now().Add(-10 * time.Minute)
	p.done.Store(60)
	p.base = 50 // 10 steps in 10 minutes: 40 left take 40 minutes
	line := p.line()
	if want := "ETA 40m0s"; !strings.Contains(line, want) {
		t.Errorf("progress %q, want %q", line, want)
	}
}
