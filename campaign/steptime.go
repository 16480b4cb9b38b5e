package campaign

import (
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// stepClock notes the moments of one step that split its wall time into
// phases (model.StepTime): when the convergence wait began, the first change
// the watch saw after it, when the action and the wait ended, and the time
// spent in monitors. Its methods are no-ops on a nil clock.
type stepClock struct {
	began time.Time

	mu          sync.Mutex
	waitBegan   time.Time
	firstChange time.Time
	driven      time.Time
	monitors    time.Duration
	done        chan struct{}
	stopOnce    sync.Once
}

func newStepClock(now time.Time) *stepClock {
	return &stepClock{began: now, done: make(chan struct{})}
}

// waiting notes that the convergence wait begins now (the first wait of the
// step counts) and watches q for the first change after it.
func (c *stepClock) waiting(q *quietTracker) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.waitBegan.IsZero() {
		return
	}
	c.waitBegan = time.Now()
	if q == nil {
		return
	}
	_, _, changed := q.State()
	go func() {
		select {
		case <-changed:
			c.mu.Lock()
			c.firstChange = time.Now()
			c.mu.Unlock()
		case <-c.done:
		}
	}()
}

// drove notes that the action and its convergence wait ended now.
func (c *stepClock) drove() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.driven = time.Now()
	c.mu.Unlock()
}

// monitor adds time spent sampling monitors.
func (c *stepClock) monitor(d time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.monitors += d
	c.mu.Unlock()
}

// stop ends the watch for the first change.
func (c *stepClock) stop() {
	if c != nil {
		c.stopOnce.Do(func() { close(c.done) })
	}
}

// phases splits the step's wall time, from its start to end, into phases; t
// holds the figures run measured itself, converged is when the system stopped
// changing (zero when it did not converge).
func (c *stepClock) phases(kind model.StepKind, t Timing, converged, end time.Time) model.StepTime {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return splitPhases(stepMoments{began: c.began, waitBegan: c.waitBegan, firstChange: c.firstChange, converged: converged,
		driven: c.driven, end: end, monitors: c.monitors}, kind, t)
}

// stepMoments are the moments of a step that splitPhases divides.
type stepMoments struct {
	began, waitBegan, firstChange, converged, driven, end time.Time
	monitors                                              time.Duration
}

// splitPhases is the pure division of a step's wall time: the action (apply,
// or a fault's hold) until the convergence wait began; the operator's
// reaction until the first change; convergence until the last change; the
// quiet window until the wait ended; then the figures run timed itself
// (system settle, snapshot less monitors, monitors, stability, oracles, files
// and journal); the rest is "other". Moments are clamped to stay in order.
func splitPhases(m stepMoments, kind model.StepKind, t Timing) model.StepTime {
	out := model.StepTime{}
	add := func(phase string, d time.Duration) {
		if ms := d.Milliseconds(); ms > 0 {
			out[phase] += ms
		}
	}
	clamp := func(x, lo, hi time.Time) time.Time {
		if x.Before(lo) {
			return lo
		}
		if x.After(hi) {
			return hi
		}
		return x
	}
	if m.driven.IsZero() || m.driven.Before(m.began) {
		m.driven = m.began
	}
	wait := m.driven // no wait: the whole drive was the action (an apply the API server refused)
	if !m.waitBegan.IsZero() {
		wait = clamp(m.waitBegan, m.began, m.driven)
	}
	action := model.PhaseApply
	if kind == model.StepFault {
		action = model.PhaseFaultHold
	}
	add(action, wait.Sub(m.began))
	last := m.driven // not converged: the whole wait was convergence
	if !m.converged.IsZero() {
		last = clamp(m.converged, wait, m.driven)
	}
	first := wait
	if !m.firstChange.IsZero() {
		first = clamp(m.firstChange, wait, last)
	}
	add(model.PhaseReaction, first.Sub(wait))
	add(model.PhaseConverge, last.Sub(first))
	add(model.PhaseQuiet, m.driven.Sub(last))
	ms := time.Millisecond
	add(model.PhaseSettle, time.Duration(t.SystemSettle)*ms)
	add(model.PhaseSnapshot, time.Duration(t.Snapshot)*ms-m.monitors)
	add(model.PhaseMonitors, m.monitors)
	add(model.PhaseStability, time.Duration(t.Stability)*ms)
	add(model.PhaseOracles, time.Duration(t.Oracles)*ms)
	add(model.PhaseRecord, time.Duration(t.Overhead-t.Snapshot-t.Oracles)*ms)
	var sum int64
	for _, v := range out {
		sum += v
	}
	add(model.PhaseOther, m.end.Sub(m.began)-time.Duration(sum)*ms)
	return out
}
