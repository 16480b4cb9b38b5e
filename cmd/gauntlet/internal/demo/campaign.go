package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/gauntlet-dev/gauntlet/bench/bugs"
)

// DemoBug is the seeded bug the demo's campaign must catch: a default in the
// operator's config code overrules the user's value (Acto's "a default value
// overwrites the user's" pattern), caught by the consistency oracle.
const DemoBug = "04-config-default-overrules-user"

// CampaignOptions configure RunCampaign.
type CampaignOptions struct {
	// RepoRoot is the Gauntlet repository (the seeded bugs and the operator source).
	RepoRoot string
	// WorkDir holds the operator binaries, cluster state and results folders.
	WorkDir string
	// Bug is the seeded bug to catch (default DemoBug).
	Bug string
}

// RunCampaign is the main job shown end to end: a short campaign against the
// bundled operator built with one seeded bug, which must raise an alarm with a
// minimized reproducer and a generated Go test, then the same campaign against
// the clean operator, which must raise none. It prints what it found and where
// the reports are; it fails when the bug is missed or the clean operator alarms.
func RunCampaign(ctx context.Context, o CampaignOptions, out io.Writer) error {
	if o.Bug == "" {
		o.Bug = DemoBug
	}
	all, err := bugs.Load(o.RepoRoot)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var bug *bugs.Bug
	for i := range all {
		if all[i].Name == o.Bug {
			bug = &all[i]
		}
	}
	if bug == nil {
		return fmt.Errorf("demo: no seeded bug %q in operator/testdata/bugs", o.Bug)
	}
	step := func(format string, a ...any) { fmt.Fprintf(out, "==> "+format+"\n", a...) }
	bo := bugs.Options{RepoRoot: o.RepoRoot, WorkDir: o.WorkDir, Minimize: true, GoTests: true}

	step("campaign against the operator with seeded bug %s (%s): cases %v", bug.Name, bug.Pattern, bug.Cases)
	t0 := time.Now()
	row := bugs.RunOne(ctx, bo, *bug)
	if row.Err != nil {
		return fmt.Errorf("demo: the seeded-bug campaign: %w", row.Err)
	}
	step("%d steps in %v; %d alarm groups", row.Steps, time.Since(t0).Round(time.Second), row.Alarms)
	printGroups(out, row)
	if !row.CaughtAsExpected() {
		return fmt.Errorf("demo: seeded bug %s was not caught by %v (see %s)", bug.Name, bug.Expect, row.Dir)
	}

	clean := *bug
	clean.Name, clean.Patch = "clean", ""
	step("the same campaign against the clean operator")
	t1 := time.Now()
	crow := bugs.RunOne(ctx, bo, clean)
	if crow.Err != nil {
		return fmt.Errorf("demo: the clean campaign: %w", crow.Err)
	}
	step("%d steps in %v; %d alarm groups (goal 0)", crow.Steps, time.Since(t1).Round(time.Second), crow.Alarms)
	printGroups(out, crow)
	fmt.Fprintf(out, "    report: %s\n", filepath.Join(crow.Dir, "report.html"))
	if crow.Alarms > 0 {
		return fmt.Errorf("demo: the clean operator raised %d alarm groups (see %s)", crow.Alarms, crow.Dir)
	}
	step("seeded bug caught, clean operator clean")
	return nil
}

// printGroups prints each alarm group with its reproducer and Go test, and the
// campaign's report.
func printGroups(out io.Writer, row bugs.Row) {
	if row.Result == nil {
		return
	}
	for _, g := range row.Result.Groups {
		kind := "bug"
		if g.Misoperation {
			kind = "misoperation"
		}
		fmt.Fprintf(out, "    alarm %d (%s) %s: %s\n", g.ID, kind, g.Oracle, g.Summary)
		dir := filepath.Join(row.Dir, "alarms", fmt.Sprint(g.ID))
		if g.Reproducer != nil {
			state := "not confirmed"
			if g.Reproducer.Confirmed {
				state = "confirmed by a re-run"
			}
			fmt.Fprintf(out, "      reproducer (%d steps, %s): gauntlet reproduce %s\n", len(g.Reproducer.Steps), state, dir)
		}
		tests, _ := filepath.Glob(filepath.Join(dir, "*_test.go"))
		sort.Strings(tests)
		for _, f := range tests {
			fmt.Fprintf(out, "      Go test: %s\n", f)
		}
	}
	if _, err := os.Stat(filepath.Join(row.Dir, "report.html")); err == nil {
		fmt.Fprintf(out, "    report: %s\n", filepath.Join(row.Dir, "report.html"))
	}
}
