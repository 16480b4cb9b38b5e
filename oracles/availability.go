package oracles

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Availability returns the success rate of the workload's requests (writes and
// reads; read-backs after convergence are not requests) that started during
// the transition, from Step.Started to Step.Converged (or to the removal of
// the step's last fault, when later), or to the snapshot (Curr.Taken) when the
// step timed out; and the number of those requests. A
// request succeeds when the server answered it (Op.OK), whatever the
// replication acknowledgement. With no history or no request in the window, n
// is 0 and so is the rate. Campaigns record the figure of every step: it is
// reported whether or not the availability oracle raises an alarm.
func Availability(tr *model.Transition) (rate float64, n int) {
	ops := requests(tr)
	if len(ops) == 0 {
		return 0, 0
	}
	ok := 0
	for _, op := range ops {
		if op.OK {
			ok++
		}
	}
	return float64(ok) / float64(len(ops)), len(ops)
}

// window bounds a transition: the step's start, and its convergence or the
// snapshot (zero bounds are open).
func window(tr *model.Transition) (from, to time.Time) {
	if tr.Step != nil {
		from, to = tr.Step.Started, tr.Step.Converged
	}
	if to.IsZero() && tr.Curr != nil {
		to = tr.Curr.Taken
	}
	if tr.Step != nil && !to.IsZero() {
		// A fault's transition lasts until the fault is gone, even when the objects
		// settled while it held.
		for _, f := range tr.Step.Faults {
			if f.Removed.After(to) {
				to = f.Removed
			}
		}
	}
	return from, to
}

// requests lists the writes and reads of tr.History that started in the
// transition's window, in start order.
func requests(tr *model.Transition) []model.Op {
	if tr == nil || tr.History == nil {
		return nil
	}
	from, to := window(tr)
	var out []model.Op
	for _, op := range tr.History.Ops {
		if op.Kind != model.OpWrite && op.Kind != model.OpRead {
			continue
		}
		if !from.IsZero() && op.Start.Before(from) || !to.IsZero() && op.Start.After(to) {
			continue
		}
		out = append(out, op)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// AvailabilityOracle finds outages during transitions (docs/architecture.md §3, "availability
// & durability"): the success rate of the workload's requests (Availability)
// below a threshold. The threshold depends on the step:
//
//   - a planned operation — an apply, recreate or rollback step with no injected
//     fault — must keep Config.MinAvailability (DefaultMinAvailability, 80%);
//   - a step with injected faults is judged against
//     Config.MinAvailabilityUnderFault, 0 (never) by default: the rate is only
//     recorded;
//   - other steps (the seed, differential runs, fault steps whose faults could
//     not be injected) are not judged.
//
// Planned operations of a system that promises no replica (History.Required 0:
// a single server) are not judged: restarting it is an outage by design.
// Transitions with fewer than MinAvailabilityRequests requests are not judged,
// and neither are transitions without a workload history. The finding gives
// the figures, the longest run of failed requests and the errors by kind.
//
// Create it with NewAvailability.
type AvailabilityOracle struct {
	planned, faulted float64 // thresholds; 0 means never
}

// NewAvailability returns the availability oracle configured by cfg.
func NewAvailability(cfg Config) *AvailabilityOracle {
	a := &AvailabilityOracle{planned: cfg.MinAvailability, faulted: cfg.MinAvailabilityUnderFault}
	switch {
	case a.planned == 0:
		a.planned = DefaultMinAvailability
	case a.planned < 0:
		a.planned = 0
	}
	if a.faulted < 0 {
		a.faulted = 0
	}
	return a
}

// Name is "availability".
func (a *AvailabilityOracle) Name() string { return NameAvailability }

// Check compares the transition's success rate with the step's threshold.
func (a *AvailabilityOracle) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Step == nil || t.History == nil || ctx.Err() != nil {
		return nil
	}
	st := t.Step
	var kinds, faults []string // fault kinds; as signature parts
	for _, f := range st.Faults {
		if f.Unsupported == "" && !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
			faults = append(faults, "fault:"+f.Kind)
		}
	}
	threshold, what := 0.0, ""
	switch {
	case len(faults) > 0:
		threshold, what = a.faulted, "under fault ("+strings.Join(kinds, ", ")+")"
	case Recreated(t):
		// The custom resource was deleted and created again: the whole system
		// went down by design.
	case t.History.Required < 1:
		// No replica promised (a single server): a planned restart is an outage by
		// design; the figure is still recorded.
	case st.Kind == model.StepApply || st.Kind == model.StepRecreate || st.Kind == model.StepRollback:
		threshold, what = a.planned, "for a planned "+string(st.Kind)
	}
	if threshold <= 0 {
		return nil
	}
	ops := requests(t)
	rate, n := Availability(t)
	if n < MinAvailabilityRequests || rate >= threshold {
		return nil
	}
	parts := []string{string(st.Kind)}
	if len(faults) > 0 {
		parts = append(parts, faults...)
	} else {
		for _, c := range st.Changed {
			parts = append(parts, "changed:"+GeneralizePath(c))
		}
	}
	during := string(st.Kind)
	if len(st.Changed) > 0 {
		during += " changing " + strings.Join(limitStrings(st.Changed, 3), ", ")
	}
	from, to := window(t)
	failed := 0
	counts := map[model.OpKind][2]int{}
	for _, op := range ops {
		c := counts[op.Kind]
		c[1]++
		if op.OK {
			c[0]++
		} else {
			failed++
		}
		counts[op.Kind] = c
	}
	ev := []model.Evidence{{
		Path: "availability", Expected: fmt.Sprintf(">= %s", percent(threshold)), Actual: percent(rate),
		Detail: fmt.Sprintf("%d of %d requests succeeded (%s) from %s to %s: writes %d/%d, reads %d/%d; threshold %s %s",
			n-failed, n, percent(rate), clock(from), clock(to),
			counts[model.OpWrite][0], counts[model.OpWrite][1], counts[model.OpRead][0], counts[model.OpRead][1], percent(threshold), what),
	}}
	out := longestOutage(ops)
	if out.n > 0 {
		ev = append(ev, model.Evidence{Detail: fmt.Sprintf("longest outage: %d requests failed in a row from %s to %s (%s)", out.n, clock(out.from), clock(out.to), out.to.Sub(out.from).Round(time.Millisecond))})
	}
	ev = append(ev, errorClasses(ops, 5)...)
	f := model.Finding{
		Signature: model.Signature(NameAvailability, parts...),
		Summary: fmt.Sprintf("availability %s during %s, below %s %s: %d of %d requests failed, longest outage %s",
			percent(rate), during, percent(threshold), what, failed, n, out.to.Sub(out.from).Round(100*time.Millisecond)),
		Evidence: ev,
	}
	fs := newFindingSet(NameAvailability)
	fs.add(f)
	return fs.list()
}

type outage struct {
	n        int
	from, to time.Time
}

// longestOutage finds the longest run (in time) of consecutive failed requests.
func longestOutage(ops []model.Op) outage {
	var best, cur outage
	for _, op := range ops {
		if op.OK {
			cur = outage{}
			continue
		}
		if cur.n == 0 {
			cur.from = op.Start
		}
		cur.n++
		end := op.End
		if end.Before(op.Start) {
			end = op.Start
		}
		if end.After(cur.to) {
			cur.to = end
		}
		if cur.to.Sub(cur.from) > best.to.Sub(best.from) || best.n == 0 {
			best = cur
		}
	}
	return best
}

// errorClasses groups failed requests by error message with numbers and
// addresses normalized (each shown by its first message), most frequent
// first, at most max classes.
func errorClasses(ops []model.Op, max int) []model.Evidence {
	type class struct {
		example     string // the first raw message
		n           int
		first, last time.Time
		kinds       []string
	}
	byMsg := map[string]*class{}
	var order []string
	for _, op := range ops {
		if op.OK {
			continue
		}
		msg := normMessage(orDefault(op.Err, "no answer"), "")
		c, ok := byMsg[msg]
		if !ok {
			c = &class{example: truncate(orDefault(op.Err, "no answer"), 160), first: op.Start}
			byMsg[msg] = c
			order = append(order, msg)
		}
		c.n++
		c.last = op.Start
		if !slices.Contains(c.kinds, string(op.Kind)) {
			c.kinds = append(c.kinds, string(op.Kind))
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return byMsg[order[i]].n > byMsg[order[j]].n })
	var ev []model.Evidence
	for i, m := range order {
		if i == max {
			ev = append(ev, model.Evidence{Detail: fmt.Sprintf("… %d more kinds of error", len(order)-max)})
			break
		}
		c := byMsg[m]
		ev = append(ev, model.Evidence{Detail: fmt.Sprintf("%d × %s: %s (from %s to %s)", c.n, strings.Join(c.kinds, "/"), c.example, clock(c.first), clock(c.last))})
	}
	return ev
}

func percent(r float64) string { return fmt.Sprintf("%.1f%%", 100*r) }

func clock(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return t.Format("15:04:05.000")
}
