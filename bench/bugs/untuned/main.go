// Command untuned is the untuned mode of the seeded-bug benchmark (`make
// bench-bugs MODE=untuned`): every seeded bug's operator, and the clean one,
// under the command a user runs — `gauntlet run --target valkey --faults all`
// with a budget and no per-bug cases or fault scripts — for each seed. It
// prints, per bug and seed, whether the campaign caught the bug (by which
// oracle, at which step), reached its trigger but missed it, or never reached
// it, and the clean operator's alarm groups per seed (goal 0). It exits 1 when
// a campaign failed or the clean operator raised an alarm group.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-dev/gauntlet/bench/bugs"
	"github.com/gauntlet-dev/gauntlet/targets"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench-bugs untuned:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("untuned", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repo := fs.String("repo", "", "Gauntlet repository (default: found above the working directory)")
	out := fs.String("out", "bench-results/bugs-untuned", "work folder: operator binaries, one results folder per seed and campaign, table.txt")
	gauntlet := fs.String("gauntlet", "", "gauntlet binary the campaigns run (default: built into the work folder)")
	seeds := fs.String("seeds", "1 2 3", "seeds, separated by spaces or commas")
	budget := fs.Duration("budget", 8*time.Minute, "each campaign's --budget")
	workers := fs.String("workers", "2", "each campaign's --workers (a number, or auto)")
	only := fs.String("bugs", "", "comma-separated seeded bug names (default: every bug)")
	verbose := fs.Bool("v", false, "print the campaigns' progress lines")
	reclassify := fs.Bool("reclassify", false, "judge the results folders a previous run left in -out again (after a change of the bugs' triggers) instead of running campaigns")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (every option is a flag: -seeds, -budget, -workers, -bugs, -out)", fs.Args())
	}
	o := bugs.UntunedOptions{RepoRoot: *repo, Gauntlet: *gauntlet, Budget: *budget, Workers: *workers, Reclassify: *reclassify}
	if o.RepoRoot == "" {
		r, err := targets.FindRepoRoot(".")
		if err != nil {
			return fmt.Errorf("find the Gauntlet repository (pass -repo): %w", err)
		}
		o.RepoRoot = r
	}
	var err error
	if o.WorkDir, err = filepath.Abs(*out); err != nil {
		return err
	}
	if o.Gauntlet != "" {
		if o.Gauntlet, err = filepath.Abs(o.Gauntlet); err != nil {
			return err
		}
	}
	if o.Seeds, err = parseSeeds(*seeds); err != nil {
		return err
	}
	if *only != "" {
		o.Only = strings.Split(*only, ",")
	}
	if *workers != "auto" {
		if n, err := strconv.Atoi(*workers); err != nil || n < 1 {
			return fmt.Errorf("-workers %q: want a positive number or auto", *workers)
		}
	}
	progress := &lineFilter{w: stderr, all: *verbose}
	o.Progress = progress
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rows, runErr := bugs.RunUntuned(ctx, o, func(r bugs.UntunedRow) {
		verdict := string(r.Verdict)
		if r.Bug == "clean" && r.Err == nil {
			verdict = fmt.Sprintf("%d alarm groups (goal 0)", r.Alarms)
		}
		fmt.Fprintf(stderr, "untuned: seed %d, %s: %s (%d steps in %s; %s)\n", r.Seed, r.Bug, verdict, r.Steps, r.Duration.Round(time.Second), r.Dir)
	})
	var b strings.Builder
	if err := bugs.WriteUntunedTable(&b, rows); err != nil {
		return err
	}
	fmt.Fprint(stdout, b.String())
	if err := os.WriteFile(filepath.Join(o.WorkDir, "table.txt"), []byte(b.String()), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("write the table: %w", err)
	}
	if runErr != nil {
		return runErr
	}
	var bad []string
	for _, r := range rows {
		switch {
		case r.Err != nil:
			bad = append(bad, fmt.Sprintf("seed %d, %s: campaign failed", r.Seed, r.Bug))
		case r.Bug == "clean" && r.Alarms > 0:
			bad = append(bad, fmt.Sprintf("seed %d: %d alarm groups on the clean operator (see %s)", r.Seed, r.Alarms, r.Dir))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// parseSeeds reads "1 2 3" or "1,2,3".
func parseSeeds(s string) ([]int64, error) {
	var out []int64
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("-seeds %q: %q is not a number", s, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-seeds %q: no seed", s)
	}
	return out, nil
}

// lineFilter passes the benchmark's own lines ("untuned: …") and, when all
// is set, the campaigns' progress lines too.
type lineFilter struct {
	w   io.Writer
	all bool
	buf []byte
}

func (f *lineFilter) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	for {
		i := strings.IndexByte(string(f.buf), '\n')
		if i < 0 {
			break
		}
		line := f.buf[:i+1]
		if f.all || strings.HasPrefix(string(line), "untuned: ") {
			if _, err := f.w.Write(line); err != nil {
				return len(p), err
			}
		}
		f.buf = f.buf[i+1:]
	}
	return len(p), nil
}
