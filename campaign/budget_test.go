package campaign

import (
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/testing/testio"
	"github.com/gauntlet-dev/gauntlet/model"
)

func TestBudget(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newBudget(t0, 20*time.Minute)
	if r := b.reserve; r != 90*time.Second {
		t.Fatalf("reserve for 20m = %v, want 1m30s", r)
	}
	if !b.mayStart(t0) {
		t.Fatal("the first iteration must start")
	}
	if got := b.cutoff(); !got.Equal(t0.Add(18*time.Minute + 30*time.Second)) {
		t.Fatalf("cutoff = %v after the start, want 18m30s (the deadline less the reserve)", got.Sub(t0))
	}
	b.observe(2 * time.Minute)
	b.observe(30 * time.Second)
	b.observe(30 * time.Second)
	// 20m - 1m30s reserve - 1m mean = 17m30s: the last start time (the
	// slowest, 2m, does not hold every worker back).
	if !b.mayStart(t0.Add(17*time.Minute + 29*time.Second)) {
		t.Fatal("an iteration that fits was refused")
	}
	if b.reason() != "" {
		t.Fatalf("stopped early: %q", b.reason())
	}
	if b.mayStart(t0.Add(17*time.Minute + 31*time.Second)) {
		t.Fatal("an iteration that would overrun the budget was allowed")
	}
	if b.reason() != StopBudget {
		t.Fatalf("reason = %q, want %q", b.reason(), StopBudget)
	}
	if b.mayStart(t0) {
		t.Fatal("a stopped campaign started an iteration")
	}
	if got := b.left(t0.Add(10 * time.Minute)); got != 8*time.Minute+30*time.Second {
		t.Fatalf("left = %v, want 8m30s", got)
	}

	none := newBudget(t0, 0)
	none.observe(time.Hour)
	if !none.cutoff().IsZero() {
		t.Fatal("no budget: no cutoff")
	}
	if !none.mayStart(t0.Add(100 * time.Hour)) {
		t.Fatal("no budget: every iteration starts")
	}
	none.stop(StopSignal)
	none.stop(StopBudget)
	if none.mayStart(t0) || none.reason() != StopSignal {
		t.Fatalf("after stop(signal): reason %q", none.reason())
	}
	if got := reserveFor(10 * time.Hour); got != 2*time.Minute {
		t.Fatalf("reserve is capped at 2m, got %v", got)
	}
}

// In a log (not a terminal) progress prints a line when steps finish and a
// heartbeat after a silence, never a line per tick.
func TestProgressInALog(t *testing.T) {
	out := &testio.Buffer{}
	p := newProgress(Config{Progress: out}, 10)
	p.tick, p.heartbeat = 5*time.Millisecond, time.Hour
	stop := p.start()
	defer stop()
	p.done.Add(1)
	waitFor(t, func() bool { return strings.Count(out.String(), "\n") == 1 }, "a line after the first step")
	time.Sleep(50 * time.Millisecond) // ten ticks without change
	if n := strings.Count(out.String(), "\n"); n != 1 {
		t.Fatalf("%d lines after ticks without progress, want 1", n)
	}
	p.alarms.Add(1)
	waitFor(t, func() bool { return strings.Count(out.String(), "\n") == 2 }, "a line after an alarm")
	stop()
	p2 := newProgress(Config{Progress: out}, 10)
	p2.tick, p2.heartbeat = 5*time.Millisecond, 20*time.Millisecond
	stop2 := p2.start()
	defer stop2()
	waitFor(t, func() bool { return strings.Count(out.String(), "\n") >= 3 }, "a heartbeat after a silence")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // bounds a failing test only
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// The progress line's alarms are the report's: a misoperation step's findings
// (a desired state wrong on purpose, reported apart) are not counted, on the
// live line or when a resumed campaign recounts its journal.
func TestProgressAlarmsLeaveMisoperationsOut(t *testing.T) {
	bug := &StepRecord{Findings: []model.Finding{{Severity: model.SeverityError}}}
	misop := &StepRecord{Findings: []model.Finding{{Severity: model.SeverityError}}}
	misop.Misoperation = true
	p := newProgress(Config{}, 10)
	p.alarm(bug)
	p.alarm(misop)
	if n := p.alarms.Load(); n != 1 {
		t.Fatalf("progress counts %d alarms, want 1 (the misoperation left out)", n)
	}
	if n := countAlarms([]Record{{Step: bug}, {Step: misop}}); n != 1 {
		t.Fatalf("countAlarms = %d, want 1", n)
	}
}
