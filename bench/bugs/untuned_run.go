package bugs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gauntlet-dev/gauntlet/campaign"
)

// UntunedOptions configure the untuned mode: every seeded bug's operator, and
// the clean one, under the command a user runs on a target Gauntlet was not
// tuned for — `gauntlet run --target valkey --faults all` with a budget, no
// per-bug cases, seeds or fault scripts.
type UntunedOptions struct {
	// RepoRoot is the Gauntlet repository (required).
	RepoRoot string
	// WorkDir holds the binaries, clusters' state and results folders (required).
	WorkDir string
	// Gauntlet is the gauntlet binary the campaigns run (empty: built from
	// RepoRoot into WorkDir).
	Gauntlet string
	// Only restricts the run to these bug names (empty: every bug).
	Only []string
	// Seeds are the campaigns' seeds (default 1, 2, 3).
	Seeds []int64
	// Budget is each campaign's --budget (default 8 minutes).
	Budget time.Duration
	// Workers is each campaign's --workers: a number or "auto" (default "2").
	Workers string
	// Reclassify judges the results folders a previous run left in WorkDir
	// again (after a change of the bugs' triggers) instead of running campaigns.
	Reclassify bool
	// Log receives diagnostics (default: discarded).
	Log *slog.Logger
	// Progress receives a line per campaign started and ended, and the
	// campaigns' own progress lines (optional).
	Progress io.Writer
}

func (o UntunedOptions) withDefaults() UntunedOptions {
	if len(o.Seeds) == 0 {
		o.Seeds = []int64{1, 2, 3}
	}
	if o.Budget <= 0 {
		o.Budget = 8 * time.Minute
	}
	if o.Workers == "" {
		o.Workers = "2"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// UntunedArgs are the arguments of the `gauntlet run` command the untuned
// mode runs for one campaign (the user's untuned command, plus where the
// operator binary, state and results go).
func UntunedArgs(o UntunedOptions, seed int64, operator, stateDir, outDir string) []string {
	o = o.withDefaults()
	return []string{"run", "--target", "valkey", "--faults", "all", "--workers", o.Workers,
		"--seed", strconv.FormatInt(seed, 10), "--budget", o.Budget.String(), "--no-minimize",
		"--repo", o.RepoRoot, "--operator-binary", operator, "--state-dir", stateDir, "--out", outDir}
}

// RunUntuned runs, for every seed, the clean operator's campaign and then
// every selected bug's, and classifies each bug against the clean campaign of
// its seed. Rows come seed by seed, the clean row first; onRow (optional) is
// called as each is done.
func RunUntuned(ctx context.Context, o UntunedOptions, onRow func(UntunedRow)) ([]UntunedRow, error) {
	o = o.withDefaults()
	bs, err := Load(o.RepoRoot)
	if err != nil {
		return nil, err
	}
	if bs, err = selectBugs(bs, o.Only); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("untuned work folder: %w", err)
	}
	if o.Gauntlet == "" && !o.Reclassify {
		o.Gauntlet = filepath.Join(o.WorkDir, "gauntlet")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.Gauntlet, "./cmd/gauntlet")
		build.Dir = o.RepoRoot
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build gauntlet: %w: %s", err, out)
		}
	}
	// One operator binary per bug (and the clean one), shared by the seeds.
	bins := map[string]string{}
	buildErr := map[string]error{}
	for _, b := range append([]Bug{{Name: "clean"}}, bs...) {
		if o.Reclassify {
			break
		}
		bin := filepath.Join(o.WorkDir, "bin", b.Name, "valkey-operator")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Progress, "untuned: building the %s operator\n", b.Name)
		if err := BuildOperator(ctx, o.RepoRoot, b.Patch, bin); err != nil {
			buildErr[b.Name] = err
			continue
		}
		bins[b.Name] = bin
	}
	var rows []UntunedRow
	emit := func(r UntunedRow) {
		rows = append(rows, r)
		if onRow != nil {
			onRow(r)
		}
	}
	for _, seed := range o.Seeds {
		if ctx.Err() != nil {
			return rows, ctx.Err()
		}
		var clean *Record
		crow := UntunedRow{Bug: "clean", Pattern: "the clean operator", Seed: seed, Err: buildErr["clean"]}
		if crow.Err == nil {
			start := time.Now()
			rec, dir, err := o.runCampaign(ctx, "clean", seed, bins["clean"])
			if err == nil {
				crow = CleanRow(seed, rec)
				clean = rec
			}
			crow.Err, crow.Dir, crow.Duration = err, dir, o.took(start, rec)
		}
		if crow.Err != nil {
			crow.Verdict = VerdictError
		}
		emit(crow)
		for _, b := range bs {
			if ctx.Err() != nil {
				return rows, ctx.Err()
			}
			row := UntunedRow{Bug: b.Name, Pattern: b.Pattern, Seed: seed, Expect: b.Expect, Trigger: b.Trigger.What, Err: buildErr[b.Name]}
			if row.Err == nil {
				start := time.Now()
				rec, dir, err := o.runCampaign(ctx, b.Name, seed, bins[b.Name])
				switch {
				case err == nil:
					row = Classify(b, seed, rec, clean)
				case errors.Is(err, errSeedGate) && clean != nil:
					// The bug broke the seed (the clean operator's passed): the
					// seed gate stopped the campaign before any test case.
					row.Verdict, row.Caught, row.Err = VerdictCaught, map[string]int{"seed-gate": 1}, nil
					row.CaughtStep = "seed"
				default:
					row.Err = err
				}
				row.Dir, row.Duration = dir, o.took(start, rec)
			}
			if row.Err != nil {
				row.Verdict = VerdictError
			}
			emit(row)
		}
	}
	return rows, nil
}

// took is a campaign's wall time: measured, or the recorded campaign's when reclassifying.
func (o UntunedOptions) took(start time.Time, rec *Record) time.Duration {
	if o.Reclassify {
		if rec == nil || rec.Summary.Finished.IsZero() {
			return 0
		}
		return rec.Summary.Finished.Sub(rec.Summary.Started)
	}
	return time.Since(start)
}

// errSeedGate marks a campaign the seed gate stopped.
var errSeedGate = errors.New("the seed gate stopped the campaign")

// runCampaign runs one untuned campaign of the operator binary bin and reads
// its results folder. The command's exit status is not an error when the
// results folder is complete (it exits 1 on alarm groups).
func (o UntunedOptions) runCampaign(ctx context.Context, name string, seed int64, bin string) (*Record, string, error) {
	base := filepath.Join(o.WorkDir, fmt.Sprintf("seed%d", seed), name)
	out, state := filepath.Join(base, "results"), filepath.Join(base, "state")
	logPath := filepath.Join(base, "run.log")
	if o.Reclassify {
		rec, err := ReadRecord(out)
		if err != nil {
			log, _ := os.ReadFile(logPath)
			return nil, out, campaignError(nil, err, string(log), logPath)
		}
		return rec, out, nil
	}
	if err := os.RemoveAll(base); err != nil {
		return nil, out, err
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, out, err
	}
	// Keep the results, not the clusters' state (gigabytes per campaign).
	defer os.RemoveAll(state)
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, out, err
	}
	defer logf.Close()
	// Setup, the plan's API-server check, differential re-runs and the reports
	// come on top of the budget.
	cctx, cancel := context.WithTimeout(ctx, o.Budget+15*time.Minute)
	defer cancel()
	args := UntunedArgs(o, seed, bin, state, out)
	cmd := exec.CommandContext(cctx, o.Gauntlet, args...)
	// An interrupted campaign ends partial with its reports (as on SIGINT from a user).
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 3 * time.Minute
	var tail bytes.Buffer
	cmd.Stdout = io.MultiWriter(logf, &tail)
	cmd.Stderr = io.MultiWriter(logf, &tail, o.Progress)
	fmt.Fprintf(o.Progress, "untuned: seed %d, %s: gauntlet %s\n", seed, name, strings.Join(args, " "))
	runErr := cmd.Run()
	rec, err := ReadRecord(out)
	if err == nil {
		return rec, out, nil
	}
	return nil, out, campaignError(runErr, err, tail.String(), logPath)
}

// campaignError says why a campaign left no readable results folder: the
// seed gate stopped it (errSeedGate), the command failed, or its results are
// unreadable (readErr); log is the command's output.
func campaignError(runErr, readErr error, log, logPath string) error {
	last := lastLines(log, 3)
	switch {
	case strings.Contains(log, campaign.ErrSeedUnhealthy.Error()):
		return fmt.Errorf("%w: %s (log %s)", errSeedGate, last, logPath)
	case runErr != nil:
		return fmt.Errorf("gauntlet run: %w: %s (log %s)", runErr, last, logPath)
	}
	return fmt.Errorf("%w (log %s)", readErr, logPath)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// selectBugs keeps the bugs named in only (all when empty).
func selectBugs(bs []Bug, only []string) ([]Bug, error) {
	if len(only) == 0 {
		return bs, nil
	}
	want := map[string]bool{}
	for _, n := range only {
		want[n] = true
	}
	var sel []Bug
	for _, b := range bs {
		if want[b.Name] {
			sel = append(sel, b)
			delete(want, b.Name)
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("no seeded bug named %v in %s", slices.Sorted(maps.Keys(boolCounts(want))), Dir)
	}
	return sel, nil
}

func boolCounts(m map[string]bool) map[string]int {
	out := map[string]int{}
	for k := range m {
		out[k] = 1
	}
	return out
}

// WriteUntunedTable prints the untuned mode's table (one row per bug and
// seed), the clean operator's alarm groups per seed (goal 0), and a legend of
// what reaches each bug.
func WriteUntunedTable(w io.Writer, rows []UntunedRow) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "bug\tseed\tverdict\tcaught by\tcaught at\treached at\tother new alarms\tsteps\ttime\texpected")
	var cleans []UntunedRow
	legend := map[string]string{}
	var order []string
	for _, r := range rows {
		if isClean(r.Bug) {
			cleans = append(cleans, r)
			continue
		}
		if _, ok := legend[r.Bug]; !ok {
			order = append(order, r.Bug)
			legend[r.Bug] = r.Trigger
		}
		verdict := string(r.Verdict)
		if r.Err != nil {
			verdict = "error: " + firstLine(r.Err.Error())
		}
		caughtAt := "-"
		if r.CaughtStep != "" {
			caughtAt = r.CaughtStep
			if r.CaughtAfter > 0 {
				caughtAt += " (" + r.CaughtAfter.Round(time.Second).String() + ")"
			}
		}
		reached := "-"
		if r.Reach != nil {
			reached = fmt.Sprintf("%s (%s): %s", r.Reach.Step, r.Reach.After.Round(time.Second), r.Reach.How)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.Bug, r.Seed, verdict, oracleList(r.Caught), caughtAt, reached,
			oracleList(r.Other), r.Steps, r.Duration.Round(time.Second), strings.Join(r.Expect, ","))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range cleans {
		var err error
		if c.Err != nil {
			_, err = fmt.Fprintf(w, "clean operator, seed %d: campaign failed: %v\n", c.Seed, c.Err)
		} else {
			by := ""
			if len(c.AlarmOracles) > 0 {
				by = " " + oracleList(c.AlarmOracles)
			}
			_, err = fmt.Fprintf(w, "clean operator, seed %d: %d alarm groups (goal 0)%s, %d misoperation groups; %d steps in %s\n",
				c.Seed, c.Alarms, by, c.Misoperations, c.Steps, c.Duration.Round(time.Second))
		}
		if err != nil {
			return err
		}
	}
	for _, b := range order {
		if legend[b] == "" {
			continue
		}
		if _, err := fmt.Fprintf(w, "reached, %s: %s\n", b, legend[b]); err != nil {
			return err
		}
	}
	return nil
}
