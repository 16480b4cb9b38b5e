// Command campaignfigures prints the figures of a campaign's results folder
// that `make bench-campaign` reports: steps and transitions per hour, timed-out
// steps, alarm and misoperation groups, the top-level properties covered, and
// where the steps' time went (per phase and per step kind).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: campaignfigures RESULTS_DIR")
		os.Exit(2)
	}
	if err := run(os.Stdout, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "campaignfigures:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return fmt.Errorf("%w (did the campaign write its reports?)", err)
	}
	var sum reports.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Join(dir, "summary.json"), err)
	}
	recs, _, err := campaign.ReadJournal(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return err
	}
	var desired, timedOut, stuck int
	var slowest, saved time.Duration
	for _, r := range recs {
		s := r.Step
		if r.Type != campaign.RecStep || s == nil {
			continue
		}
		if s.Kind == model.StepApply || s.Kind == model.StepRecreate {
			desired++
		}
		if s.TimedOut {
			timedOut++
		}
		if s.Stuck {
			// What the default timeouts would have cost: 5m, or 1m for a
			// step known to be a misoperation.
			stuck++
			limit := 5 * time.Minute
			if s.Misoperation {
				limit = time.Minute
			}
			saved += max(limit-time.Duration(s.Timing.Converge)*time.Millisecond, 0)
		}
		if !s.Converged.IsZero() && s.Converged.Sub(s.Started) > slowest {
			slowest = s.Converged.Sub(s.Started)
		}
	}
	wall := sum.RunTime() // over every run of a resumed campaign
	if wall <= 0 {
		return errors.New("the summary has no finish time")
	}
	tops, coveredTops := map[string]bool{}, map[string]bool{}
	for _, p := range sum.Coverage.Properties {
		if p.Path == "spec" {
			continue
		}
		top := topLevel(p.Path)
		tops[top] = true
		if p.Covered() {
			coveredTops[top] = true
		}
	}
	var missing []string
	for t := range tops {
		if !coveredTops[t] {
			missing = append(missing, t)
		}
	}
	sort.Strings(missing)
	status := "complete"
	if sum.Partial {
		status = "partial (stopped by " + string(sum.StopReason) + ")"
	}
	fmt.Fprintf(w, "campaign %s: seed %d, %d workers, %s in %s (budget %s)\n", sum.CampaignID, sum.Seed, sum.Workers, status, wall.Round(time.Second), orNone(sum.Budget.String()))
	fmt.Fprintf(w, "  desired-state steps:  %d (%.0f per hour)\n", desired, float64(desired)/wall.Hours())
	fmt.Fprintf(w, "  transitions:          %d (%.0f per hour)\n", sum.StepsDone, float64(sum.StepsDone)/wall.Hours())
	fmt.Fprintf(w, "  timed-out steps:      %d (slowest convergence %s)\n", timedOut, slowest.Round(time.Second))
	fmt.Fprintf(w, "  stuck steps:          %d (ended early: ≈ %s saved against the default timeouts)\n", stuck, saved.Round(time.Second))
	// Warning groups (a fault the back end could not inject, a desired state
	// the API server refused) are recorded, not alarms.
	var alarms, warnings []reports.AlarmGroup
	for _, g := range append(append([]reports.AlarmGroup{}, sum.Alarms...), sum.Warnings...) {
		if g.Severity == model.SeverityWarning {
			warnings = append(warnings, g)
		} else {
			alarms = append(alarms, g)
		}
	}
	fmt.Fprintf(w, "  warning groups:       %d\n", len(warnings))
	for _, g := range warnings {
		fmt.Fprintf(w, "    - %s: %s (%d steps)\n", g.Oracle, g.Summary, len(g.Steps))
	}
	fmt.Fprintf(w, "  alarm groups:         %d\n", len(alarms))
	for _, g := range alarms {
		fmt.Fprintf(w, "    - %s: %s (%d steps)\n", g.Oracle, g.Summary, len(g.Steps))
	}
	fmt.Fprintf(w, "  misoperation groups:  %d\n", len(sum.Misoperations))
	fmt.Fprintf(w, "  properties covered:   %d of %d (%.0f%%); top-level %d of %d\n", sum.Coverage.Covered, sum.Coverage.Total, sum.Coverage.Percent(), len(coveredTops), len(tops))
	if len(missing) > 0 {
		fmt.Fprintf(w, "  top-level not reached: %s\n", strings.Join(missing, ", "))
	}
	printTime(w, sum.Time)
	return nil
}

// printTime prints the time breakdown of summary.json (absent: the steps
// recorded no phases).
func printTime(w io.Writer, t *reports.TimeBreakdown) {
	if t == nil {
		fmt.Fprintln(w, "  time breakdown:       none recorded")
		return
	}
	fmt.Fprintf(w, "  setup:                %s; back-off: %d waits, %s; budget left unused: %s\n",
		t.Setup.D().Round(time.Second), t.BackoffWaits, t.Backoff.D().Round(time.Second), t.BudgetUnused.D().Round(time.Second))
	fmt.Fprintf(w, "  steps' time by phase (summed over workers, %s):\n", t.Steps.D().Round(time.Second))
	for _, p := range t.Phases {
		fmt.Fprintf(w, "    %-14s %9s %6.1f%%  mean %6s over %d steps\n", p.Name, p.Total.D().Round(time.Second), p.Share*100,
			(p.Total.D() / time.Duration(max(p.Steps, 1))).Round(100*time.Millisecond), p.Steps)
	}
	fmt.Fprintln(w, "  steps' time by kind:")
	for _, k := range t.Kinds {
		fmt.Fprintf(w, "    %-14s %9s %6.1f%%  mean %6s over %d steps\n", k.Name, k.Total.D().Round(time.Second), k.Share*100,
			(k.Total.D() / time.Duration(max(k.Steps, 1))).Round(100*time.Millisecond), k.Steps)
	}
}

func topLevel(path string) string {
	p := strings.TrimPrefix(path, "spec.")
	if i := strings.IndexAny(p, ".[{#"); i >= 0 {
		p = p[:i]
	}
	return p
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
