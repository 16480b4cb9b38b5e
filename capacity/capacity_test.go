package capacity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Inputs
		want int
		mem  int
	}{
		// 24 GiB host, 20 GiB free: 2.4 GiB headroom, 17.6 GiB / 1 GiB = 17 clusters; 2 cores cap at 6.
		{"cores cap", Inputs{MemTotal: 24 * GiB, MemAvailable: 20 * GiB, PerCluster: Estimate(BackendLocal), CPUs: 2, Backend: BackendLocal}, 6, 17},
		// kind costs more: 17.6 / 2.5 = 7 on 8 cores (cap 24).
		{"kind memory", Inputs{MemTotal: 24 * GiB, MemAvailable: 20 * GiB, PerCluster: Estimate(BackendKind), CPUs: 8, Backend: BackendKind}, 7, 7},
		// 8 GiB host, 5 GiB free: 2 GiB headroom, 3 clusters of 1 GiB.
		{"small host", Inputs{MemTotal: 8 * GiB, MemAvailable: 5 * GiB, PerCluster: GiB, CPUs: 4}, 3, 3},
		// No room beside the headroom: one worker anyway.
		{"no room", Inputs{MemTotal: 8 * GiB, MemAvailable: GiB, PerCluster: GiB, CPUs: 4}, 1, 0},
		{"unknown figure", Inputs{MemTotal: 8 * GiB, MemAvailable: 6 * GiB, CPUs: 4}, 1, 0},
	} {
		d := Decide(tc.in)
		if d.Workers != tc.want || d.MemCap != tc.mem {
			t.Errorf("%s: Decide = %d workers (memory allows %d), want %d (%d): %s", tc.name, d.Workers, d.MemCap, tc.want, tc.mem, d)
		}
	}
}

func TestDecisionString(t *testing.T) {
	s := Decide(Inputs{MemTotal: 24 * GiB, MemAvailable: 20 * GiB, PerCluster: 3 * GiB / 2, Measured: true, CPUs: 2, Backend: BackendLocal}).String()
	for _, want := range []string{"6 workers", "24.0 GiB total", "20.0 GiB available", "2.4 GiB kept free", "local cluster ≈ 1.5 GiB (measured", "memory allows 11", "= 6", "limited by the per-core cap"} {
		if !strings.Contains(s, want) {
			t.Errorf("explanation %q lacks %q", s, want)
		}
	}
	if s := Decide(Inputs{MemTotal: 8 * GiB, MemAvailable: 5 * GiB, PerCluster: GiB, CPUs: 4}).String(); !strings.Contains(s, "limited by memory") || !strings.Contains(s, "(estimate)") {
		t.Errorf("explanation %q should name memory as the limit and the figure an estimate", s)
	}
}

func TestSaturated(t *testing.T) {
	th := DefaultThresholds(24 * GiB)
	for _, tc := range []struct {
		name string
		was  bool
		s    Sample
		want bool
		why  string
	}{
		{"idle", false, Sample{HasPSI: true, CPUSome: 20, Load1: 1, CPUs: 2, MemAvailable: 20 * GiB}, false, ""},
		{"pressure and load", false, Sample{HasPSI: true, CPUSome: 95, Load1: 8, CPUs: 2, MemAvailable: 20 * GiB}, true, "CPU pressure 95%"},
		// Six workers alone on two cores: some pressure near 100 %, load 2–4.6: not saturated.
		{"pressure without load", false, Sample{HasPSI: true, CPUSome: 97, Load1: 4.6, CPUs: 2, MemAvailable: 20 * GiB}, false, ""},
		{"pressure falling, still above low", true, Sample{HasPSI: true, CPUSome: 80, Load1: 5, CPUs: 2, MemAvailable: 20 * GiB}, true, "CPU pressure 80%"},
		{"pressure rising below high", false, Sample{HasPSI: true, CPUSome: 80, Load1: 8, CPUs: 2, MemAvailable: 20 * GiB}, false, ""},
		{"pressure cleared", true, Sample{HasPSI: true, CPUSome: 70, Load1: 8, CPUs: 2, MemAvailable: 20 * GiB}, false, ""},
		{"load cleared", true, Sample{HasPSI: true, CPUSome: 95, Load1: 3.8, CPUs: 2, MemAvailable: 20 * GiB}, false, ""},
		// Without pressure figures the load per core decides.
		{"load", false, Sample{Load1: 7, CPUs: 2, MemAvailable: 20 * GiB}, true, "load 3.5 per core"},
		{"load falling", true, Sample{Load1: 5, CPUs: 2, MemAvailable: 20 * GiB}, true, "load 2.5 per core"},
		{"memory", false, Sample{HasPSI: true, CPUs: 2, MemAvailable: GiB}, true, "memory available 1.0 GiB"},
		{"api", false, Sample{HasPSI: true, CPUs: 2, MemAvailable: 20 * GiB, APILatency: 2 * time.Second}, true, "took 2s"},
		{"api clearing", true, Sample{HasPSI: true, CPUs: 2, MemAvailable: 20 * GiB, APILatency: 500 * time.Millisecond}, true, "clear below 300ms"},
		{"api cleared", true, Sample{HasPSI: true, CPUs: 2, MemAvailable: 20 * GiB, APILatency: 50 * time.Millisecond}, false, ""},
	} {
		got, why := Saturated(tc.was, tc.s, th)
		if got != tc.want || !strings.Contains(why, tc.why) {
			t.Errorf("%s: Saturated = %v (%q), want %v (%q)", tc.name, got, why, tc.want, tc.why)
		}
	}
}

// TestGateHoldsWhileSaturated: on a saturated host the first step starts, a
// second one waits until the host clears or the first one leaves.
func TestGateHoldsWhileSaturated(t *testing.T) {
	var busy atomic.Bool
	busy.Store(true)
	read := func() (Sample, error) {
		s := Sample{HasPSI: true, CPUSome: 10, Load1: 1, CPUs: 2, MemAvailable: 20 * GiB}
		if busy.Load() {
			s.CPUSome, s.Load1 = 100, 8
		}
		return s, nil
	}
	g := NewGate(read, DefaultThresholds(24*GiB), 5*time.Millisecond, nil)
	ctx := context.Background()
	if d, err := g.Enter(ctx, nil); err != nil || d != 0 {
		t.Fatalf("first Enter on a saturated host = %s, %v; want it to start at once (nothing in flight)", d, err)
	}
	entered := make(chan time.Duration)
	go func() {
		d, _ := g.Enter(ctx, nil)
		entered <- d
	}()
	select {
	case <-entered:
		t.Fatal("a second step started while the host was saturated and a step was in flight")
	case <-time.After(50 * time.Millisecond):
	}
	busy.Store(false)
	if d := <-entered; d <= 0 {
		t.Errorf("the held step reports waiting %s", d)
	}
	if n, w := g.Stats(); n != 1 || w <= 0 {
		t.Errorf("Stats = %d waits, %s; want 1 wait", n, w)
	}
	// Saturated again with two in flight: once both leave, a step starts.
	busy.Store(true)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := g.Enter(ctx, nil); err != nil {
			t.Error(err)
		}
	})
	time.Sleep(30 * time.Millisecond)
	g.Leave()
	g.Leave()
	wg.Wait()
	// A cancelled context ends the wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.Enter(cctx, nil); err == nil {
		t.Error("Enter with a step in flight on a saturated host and a cancelled context returned no error")
	}
	if n, _ := g.Stats(); n != 3 {
		t.Errorf("Stats = %d waits after a wait ended by its context, want 3 (it counts)", n)
	}
}

func TestGateAPILatency(t *testing.T) {
	read := func() (Sample, error) { return Sample{HasPSI: true, CPUSome: 5, CPUs: 2, MemAvailable: 20 * GiB}, nil }
	g := NewGate(read, DefaultThresholds(24*GiB), time.Millisecond, nil)
	ctx := context.Background()
	if _, err := g.Enter(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	api := func(context.Context) time.Duration {
		if calls.Add(1) < 3 {
			return 3 * time.Second
		}
		return 10 * time.Millisecond
	}
	if d, err := g.Enter(ctx, api); err != nil || d <= 0 || calls.Load() < 3 {
		t.Errorf("Enter with a slow API server = %s, %v after %d probes; want it held until the API server answered fast", d, err, calls.Load())
	}
}

func TestProc(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meminfo", "MemTotal:       24684084 kB\nMemFree:        17395876 kB\nMemAvailable:   22251304 kB\n")
	write("pressure/cpu", "some avg10=94.33 avg60=78.48 avg300=44.11 total=221242318\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	write("loadavg", "6.47 3.16 1.38 9/145 19303\n")
	// A tree: 1 → 10 (the harness) → 11 (etcd, "(a) b)" comm) → 12; 20 is elsewhere.
	write("1/stat", "1 (init) S 0 1 1\n")
	write("10/stat", "10 (gauntlet) S 1 10 10\n")
	write("10/smaps_rollup", "Rss:   200000 kB\nPss:   100000 kB\n")
	write("11/stat", "11 (a) b) S 10 10 10\n")
	write("11/smaps_rollup", "Rss:   300000 kB\nPss:   250000 kB\n")
	write("12/stat", "12 (valkey-server) S 11 10 10\n")
	write("12/status", "Name: valkey-server\nVmRSS:   8000 kB\n")
	write("20/stat", "20 (other) S 1 20 20\n")
	write("20/smaps_rollup", "Pss:   999999 kB\n")
	p := Proc{Dir: dir, CPUs: 2}
	total, avail, err := p.Memory()
	if err != nil || total != 24684084*1024 || avail != 22251304*1024 {
		t.Errorf("Memory = %d, %d, %v", total, avail, err)
	}
	s, err := p.Sample()
	if err != nil || !s.HasPSI || s.CPUSome != 94.33 || s.Load1 != 6.47 || s.MemAvailable != avail || s.CPUs != 2 {
		t.Errorf("Sample = %+v, %v", s, err)
	}
	b, n, err := p.TreeMemory(10)
	if want := uint64(100000+250000+8000) * 1024; err != nil || b != want || n != 3 {
		t.Errorf("TreeMemory(10) = %d bytes over %d processes, %v; want %d over 3", b, n, err, want)
	}
	// Without pressure: HasPSI false and an error that says so; the load still read.
	if err := os.Remove(filepath.Join(dir, "pressure/cpu")); err != nil {
		t.Fatal(err)
	}
	s, err = p.Sample()
	if err == nil || s.HasPSI || s.Load1 != 6.47 {
		t.Errorf("Sample without pressure = %+v, %v", s, err)
	}
}

func TestCache(t *testing.T) {
	c := Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	if b, measured, err := c.PerCluster(BackendLocal, "builtin:valkey"); err != nil || measured || b != Estimate(BackendLocal) {
		t.Errorf("PerCluster with no cache = %d, %v, %v; want the estimate", b, measured, err)
	}
	if err := c.Save(BackendLocal, "builtin:valkey", Measurement{Bytes: 600 * MiB, Clusters: 6, Taken: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if b, measured, err := c.PerCluster(BackendLocal, "builtin:valkey"); err != nil || !measured || b != 900*MiB {
		t.Errorf("PerCluster after a measurement = %d, %v, %v; want 900 MiB (600 × growth)", b, measured, err)
	}
	if _, measured, _ := c.PerCluster(BackendKind, "builtin:valkey"); measured {
		t.Error("a local measurement was used for kind")
	}
	if err := os.WriteFile(filepath.Join(c.Dir, CacheFile), []byte(`{"format":1,"clusters":{},"extra":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Load(BackendLocal, "x"); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Errorf("Load of a file with an unknown field = %v; want a strict decoding error naming the fix", err)
	}
}
