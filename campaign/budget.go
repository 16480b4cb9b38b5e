package campaign

import (
	"sync"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// budget decides whether a worker may start its next test-case iteration
// within Config.Budget: what is left must cover a mean iteration so far plus
// the time kept for tearing down and writing the reports. An iteration still
// running at the cutoff (the deadline less that reserve) is abandoned, as a
// signal abandons it: it is not recorded, and Resume runs it again. (Keeping
// room for the slowest iteration instead left a third of a short budget
// unused: one stuck step made every worker stop minutes early.) Once it says
// no (or stop is called) it says no to every worker.
type budget struct {
	deadline time.Time // zero: no budget
	reserve  time.Duration

	mu      sync.Mutex
	total   time.Duration // of the observed iterations
	n       int
	stopped model.StopReason
}

// newBudget starts the clock of limit (0: no limit) at began.
func newBudget(began time.Time, limit time.Duration) *budget {
	b := &budget{}
	if limit > 0 {
		b.deadline = began.Add(limit)
		b.reserve = reserveFor(limit)
	}
	return b
}

// reserveFor is the time kept at the end of a budget for tearing clusters
// down and writing the reports: 30 s plus 5 % of the budget, at most 2 min.
func reserveFor(limit time.Duration) time.Duration {
	return min(30*time.Second+limit/20, 2*time.Minute)
}

// observe records how long one iteration (a desired state with its rollback
// and fault, if any) took.
func (b *budget) observe(d time.Duration) {
	b.mu.Lock()
	b.total += d
	b.n++
	b.mu.Unlock()
}

// cutoff is when iterations still running are abandoned (zero: never).
func (b *budget) cutoff() time.Time {
	if b.deadline.IsZero() {
		return time.Time{}
	}
	return b.deadline.Add(-b.reserve)
}

// mayStart reports whether an iteration may start at now; when it may not,
// the campaign is stopped for StopBudget.
func (b *budget) mayStart(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped != "" {
		return false
	}
	var mean time.Duration
	if b.n > 0 {
		mean = b.total / time.Duration(b.n)
	}
	if b.deadline.IsZero() || now.Add(mean+b.reserve).Before(b.deadline) {
		return true
	}
	b.stopped = StopBudget
	return false
}

// stop records why the campaign stops (the first reason wins).
func (b *budget) stop(why model.StopReason) {
	b.mu.Lock()
	if b.stopped == "" {
		b.stopped = why
	}
	b.mu.Unlock()
}

// reason is why the campaign stopped, "" while it has not.
func (b *budget) reason() model.StopReason {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// left is the time left for optional work (differential re-runs,
// minimization) before the reserve; negative when none is; a day without a
// budget.
func (b *budget) left(now time.Time) time.Duration {
	if b.deadline.IsZero() {
		return 24 * time.Hour
	}
	return b.deadline.Sub(now) - b.reserve
}
