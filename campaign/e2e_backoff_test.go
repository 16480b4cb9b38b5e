package campaign

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gauntlet-dev/gauntlet/capacity"
)

// END-TO-END, CPU-BURNING: a short campaign of two workers runs beside busy
// processes that keep every core saturated (four per core, at the test's own
// priority), started once the host is saturated as the gate judges it. The capacity gate must engage
// (an iteration held back while the host was saturated) and no step may time
// out or get stuck: a loaded host slows the campaign down instead of raising
// timing alarms. It saturates the machine while it runs; run it alone.
func TestE2EBackoffBesideCPUBurner(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, _ := resumeTestConfig(t, log)
	// Four desired-state steps: the gate holds the second worker's seed back while the
	// first one's runs (both start together), and each step beside the burner is judged
	// for a timing alarm; more steps only burn the host longer for the rest of the suite.
	cfg.Workers, cfg.MaxSteps, cfg.CaseFilter = 2, 4, nil
	proc := capacity.Proc{CPUs: runtime.NumCPU()}
	total, _, err := proc.Memory()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Gate = capacity.NewGate(proc.Sample, capacity.DefaultThresholds(total), time.Second, log)

	// The burner: busy shells, stopped with their process group. Four busy processes per
	// core: the gate's rule wants a load of 3 per core beside high pressure, which one per
	// core never reaches without other work.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	burn(ctx, t, 4*runtime.NumCPU())
	t.Cleanup(cancel) // before the burners' Waits (cleanups run last first)
	// Wait until the host is saturated as the gate judges it. The one-minute load average
	// climbs towards the number of busy processes: towards 4 per core it takes over a minute
	// to pass 3 per core, so eight more per core lift it there in a quarter of that time and
	// stop once it is there; the campaign then runs beside the four per core, on a load that
	// keeps climbing towards them.
	warm, stopWarm := context.WithCancel(ctx)
	warmers := burn(warm, t, 8*runtime.NumCPU())
	th := capacity.DefaultThresholds(total)
	for deadline := time.Now().Add(3 * time.Minute); ; {
		s, err := proc.Sample()
		if err != nil {
			t.Fatal(err)
		}
		sat, why := capacity.Saturated(false, s, th)
		if sat {
			t.Logf("host beside the burner: saturated: %s", why)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the burner did not saturate the host in 3 minutes (CPU pressure %.0f%%, PSI %v, load %.1f on %d cores): %s", s.CPUSome, s.HasPSI, s.Load1, s.CPUs, why)
		}
		time.Sleep(2 * time.Second)
	}
	stopWarm()
	for _, w := range warmers {
		_ = w.Wait() // gone before the campaign starts: it runs beside four per core
	}

	t0 := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("campaign beside the burner: %v", err)
	}
	t.Logf("campaign: %d of %d desired-state steps, %d transitions in %s; back-off held %d iterations for %.1f s",
		res.Done, res.Planned, res.Bench.Transitions, time.Since(t0).Round(time.Second), res.Bench.BackoffWaits, res.Bench.BackoffSeconds)
	if res.Bench.BackoffWaits == 0 {
		t.Error("the gate never held an iteration back on a saturated host")
	}
	if res.Done != res.Planned {
		t.Errorf("done %d of %d planned desired-state steps", res.Done, res.Planned)
	}
	for _, s := range res.Steps {
		if s.Unconverged() {
			t.Errorf("step %s did not converge beside the burner (timed out %v, stuck %v)", s.ID(), s.TimedOut, s.Stuck)
		}
		for _, f := range s.Findings {
			if f.Oracle == "convergence" || f.Oracle == "stuck" {
				t.Errorf("timing alarm on %s: %s: %s", s.ID(), f.Oracle, f.Summary)
			}
		}
	}
	for _, g := range res.Groups {
		t.Logf("alarm group (not a timing alarm): %s: %s", g.Oracle, g.Summary)
	}
}

// burn starts n busy shells in their own process groups, killed with their group when ctx
// ends and waited for when t ends.
func burn(ctx context.Context, t *testing.T, n int) []*exec.Cmd {
	t.Helper()
	cmds := make([]*exec.Cmd, 0, n)
	for range n {
		cmd := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Start(); err != nil {
			t.Fatalf("start the CPU burner: %v", err)
		}
		t.Cleanup(func() { _ = cmd.Wait() })
		cmds = append(cmds, cmd)
	}
	return cmds
}
