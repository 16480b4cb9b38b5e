package capacity

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Sample is one reading of how busy the host is.
type Sample struct {
	// CPUSome is /proc/pressure/cpu's "some avg10": the share of the last ten
	// seconds (percent) in which some runnable task waited for a core. HasPSI
	// is false when the kernel does not report pressure.
	CPUSome float64
	HasPSI  bool
	// Load1 is the one-minute load average; CPUs the usable cores.
	Load1 float64
	CPUs  int
	// MemAvailable is /proc/meminfo's MemAvailable (bytes; 0: unknown).
	MemAvailable uint64
	// APILatency is how long the worker's API server took to answer /readyz
	// (0: not measured).
	APILatency time.Duration
}

// Thresholds say when the host counts as saturated: a reading at or above a
// High figure makes it so; it stays so until every reading is below the Low
// figures (hysteresis, so that the ten-second pressure average does not flap).
type Thresholds struct {
	// PressureHigh and PressureLow bound CPUSome (percent).
	PressureHigh, PressureLow float64
	// LoadHigh and LoadLow bound the load average per core. With pressure
	// figures the CPU is saturated when both are high (on a few cores "some"
	// pressure is near 100 % as soon as one task waits: the load says how
	// many do) and clear when either is low; without them the load decides.
	LoadHigh, LoadLow float64
	// MemLow is the MemAvailable below which no new step starts (bytes).
	MemLow uint64
	// APIHigh and APILow bound the API server's latency.
	APIHigh, APILow time.Duration
}

// DefaultThresholds are the Gate's thresholds on a host with memTotal bytes:
// CPU pressure 90 % and a load of 3 per core (clear once the pressure is
// below 75 % or the load below 2 per core), half
// of Headroom free, an API server answering /readyz within 1 s (back below
// 300 ms). A 2-core host running 6 campaign workers alone sat at a load of
// 2–4.6 without a timing alarm; a CPU burner beside it drives the pressure
// to 100 %.
func DefaultThresholds(memTotal uint64) Thresholds {
	return Thresholds{PressureHigh: 90, PressureLow: 75, LoadHigh: 3, LoadLow: 2, MemLow: Headroom(memTotal) / 2,
		APIHigh: time.Second, APILow: 300 * time.Millisecond}
}

// Saturated decides from one reading whether the host is saturated, given
// whether it was at the previous reading, and says why ("" when not).
func Saturated(was bool, s Sample, th Thresholds) (bool, string) {
	var why string
	cpuHigh, cpuLow := false, true
	if s.CPUs > 0 {
		per := s.Load1 / float64(s.CPUs)
		cpuHigh, cpuLow = per >= th.LoadHigh, per < th.LoadLow
		why = fmt.Sprintf("load %.1f per core (saturated at %.1f, clear below %.1f)", per, th.LoadHigh, th.LoadLow)
		if s.HasPSI {
			cpuHigh = cpuHigh && s.CPUSome >= th.PressureHigh
			cpuLow = cpuLow || s.CPUSome < th.PressureLow
			why = fmt.Sprintf("CPU pressure %.0f%% (some avg10; saturated at %.0f%%, clear below %.0f%%) and ", s.CPUSome, th.PressureHigh, th.PressureLow) + why
		}
	}
	memLow := s.MemAvailable > 0 && th.MemLow > 0 && s.MemAvailable < th.MemLow
	apiHigh, apiLow := th.APIHigh > 0 && s.APILatency >= th.APIHigh, s.APILatency < th.APILow || th.APILow <= 0
	switch {
	case cpuHigh:
		return true, why
	case memLow:
		return true, fmt.Sprintf("memory available %s below %s", gib(s.MemAvailable), gib(th.MemLow))
	case apiHigh:
		return true, fmt.Sprintf("the API server took %s to answer /readyz (saturated at %s)", s.APILatency.Round(time.Millisecond), th.APIHigh)
	case was && !cpuLow:
		return true, why
	case was && !apiLow:
		return true, fmt.Sprintf("the API server took %s to answer /readyz (clear below %s)", s.APILatency.Round(time.Millisecond), th.APILow)
	}
	return false, ""
}

// Gate starts no new step while the host is saturated and another step is in
// flight: on a saturated host a campaign goes on one step at a time rather
// than stopping. It is safe for concurrent use.
type Gate struct {
	read func() (Sample, error)
	th   Thresholds
	poll time.Duration
	log  *slog.Logger

	mu        sync.Mutex
	inFlight  int
	saturated bool
	waits     int
	waited    time.Duration
}

// NewGate returns a gate that reads the host with read (ReadSample, or a
// fake in tests) and re-reads it every poll while it holds a step back.
func NewGate(read func() (Sample, error), th Thresholds, poll time.Duration, log *slog.Logger) *Gate {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Gate{read: read, th: th, poll: poll, log: log}
}

// Enter blocks until a new step may start: at once when no other step is in
// flight, else once the host is not saturated. api, when not nil, measures the
// worker's API server latency for each reading. It returns how long it held
// the step back; every successful Enter must be followed by a Leave.
func (g *Gate) Enter(ctx context.Context, api func(context.Context) time.Duration) (time.Duration, error) {
	t0 := time.Now()
	held := false
	for {
		var lat time.Duration
		if api != nil {
			lat = api(ctx)
		}
		s, err := g.read()
		if err != nil {
			g.log.Debug("capacity: reading the host", "err", err)
		}
		s.APILatency = lat
		g.mu.Lock()
		var why string
		g.saturated, why = Saturated(g.saturated, s, g.th)
		if !g.saturated || g.inFlight == 0 {
			g.inFlight++
			d := time.Duration(0)
			if held {
				d = time.Since(t0)
				g.waits++
				g.waited += d
			}
			g.mu.Unlock()
			if held {
				g.log.Info("capacity: step started after backing off", "waited", d.Round(time.Millisecond))
			}
			return d, nil
		}
		if !held {
			g.log.Info("capacity: host saturated; no new step starts while another runs", "why", why, "inFlight", g.inFlight)
		}
		held = true
		g.mu.Unlock()
		t := time.NewTimer(g.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			d := time.Since(t0)
			g.mu.Lock()
			g.waits++
			g.waited += d
			g.mu.Unlock()
			return d, ctx.Err()
		case <-t.C:
		}
	}
}

// Leave ends a step that Enter let start.
func (g *Gate) Leave() {
	g.mu.Lock()
	if g.inFlight > 0 {
		g.inFlight--
	}
	g.mu.Unlock()
}

// Stats are how often and how long the gate held steps back.
func (g *Gate) Stats() (waits int, waited time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waits, g.waited
}
