package campaign

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// A campaign stopped by a signal (its context cancelled, as SIGINT and SIGTERM
// do in `gauntlet run`) or by its budget ends with complete reports marked
// partial and no end record, leaves no cluster, and --resume continues it to
// the end.
func TestE2EStopBySignalOrBudgetThenResume(t *testing.T) {
	t.Parallel() // each campaign has its own clusters (unique names, CIDRs under the host lock) and state root
	cfg, state := resumeTestConfig(t, slog.New(slog.NewTextHandler(io.Discard, nil)))
	out := cfg.OutDir
	jpath := filepath.Join(out, "journal.jsonl")

	// 1. Stopped by a signal once one desired-state step is recorded.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signalledAt := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			if recs, _, err := ReadJournal(jpath); err == nil && appliedSteps(recs) >= 1 {
				signalledAt <- time.Now()
				cancel()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("a campaign stopped by a signal must end with its reports, not an error: %v", err)
	}
	if res.Stopped != StopSignal {
		t.Fatalf("Stopped = %q, want %q", res.Stopped, StopSignal)
	}
	t.Logf("from the signal to the reports written and the cluster deleted: %s", time.Since(<-signalledAt).Round(time.Millisecond))
	signalled := checkPartial(t, out, jpath, StopSignal)
	assertNoClusters(t, state, "after the campaign stopped by a signal")

	// 2. Resumed with a budget that cannot even cover the time kept for the
	// reports: no step starts, the reports say why.
	cfg.Resume, cfg.Budget = true, time.Second
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("resume with a budget: %v", err)
	}
	if res.Stopped != StopBudget {
		t.Fatalf("Stopped = %q, want %q", res.Stopped, StopBudget)
	}
	if n := checkPartial(t, out, jpath, StopBudget); n != signalled {
		t.Errorf("a budget too short for any step recorded %d desired-state steps, want the %d recorded before", n, signalled)
	}

	// 3. Resumed without a budget: to the end.
	cfg.Budget = 0
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Stopped != "" || res.Done != res.Planned {
		t.Fatalf("resumed campaign: stopped %q, done %d of %d", res.Stopped, res.Done, res.Planned)
	}
	recs, _, err := ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	ends := 0
	for _, r := range recs {
		if r.Type == RecEnd {
			ends++
		}
	}
	if ends != 1 || appliedSteps(recs) != res.Planned {
		t.Errorf("journal: %d end records, %d desired-state steps; want 1 and %d", ends, appliedSteps(recs), res.Planned)
	}
	if sum := readSummary(t, out); sum.Partial || sum.StopReason != "" {
		t.Errorf("the finished campaign's summary still says partial (%q)", sum.StopReason)
	}
	assertNoClusters(t, state, "after the resumed campaign")
}

// checkPartial checks the reports of a campaign stopped for why and returns
// the desired-state steps its journal holds.
func checkPartial(t *testing.T, out, jpath string, why model.StopReason) int {
	t.Helper()
	for _, f := range []string{"summary.json", reports.JUnitFile, "report.html", "result.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("stopped by %s: report missing: %v", why, err)
		}
	}
	sum := readSummary(t, out)
	if !sum.Partial || sum.StopReason != why {
		t.Errorf("summary.json: partial %v, stopReason %q; want true, %q", sum.Partial, sum.StopReason, why)
	}
	if b, err := os.ReadFile(filepath.Join(out, "report.html")); err != nil || !containsAll(string(b), "partial run", "--resume") {
		t.Errorf("report.html does not say the run is partial (%v)", err)
	}
	recs, _, err := ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Type == RecEnd {
			t.Errorf("stopped by %s: the journal has an end record, so --resume would not continue it", why)
		}
	}
	return appliedSteps(recs)
}

func readSummary(t *testing.T, out string) reports.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s reports.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func containsAll(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
