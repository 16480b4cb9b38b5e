package campaign

import (
	"bytes"
	"slices"
	"sync"

	"github.com/gauntlet-dev/gauntlet/view"
)

// maxViewPlans bounds the perturbed re-runs derived from reference steps in
// one campaign (each is a fault step's worth of time; the campaign's own
// budget bounds them further).
const maxViewPlans = 24

// viewPlans are the perturbed re-runs derived from the view records of steps
// that converged cleanly (Sieve's plans from a reference run), de-duplicated
// by kind and target across the campaign, waiting for a fault slot.
type viewPlans struct {
	mu    sync.Mutex
	queue []view.Plan
	seen  map[string]bool
}

func newViewPlans() *viewPlans { return &viewPlans{seen: map[string]bool{}} }

// add queues the plans of ref not derived before (at most maxViewPlans in all).
func (v *viewPlans) add(ref view.Reference) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, p := range view.Plans(ref, 0) {
		if len(v.seen) >= maxViewPlans {
			break
		}
		if k := p.Key(); !v.seen[k] {
			v.seen[k] = true
			v.queue = append(v.queue, p)
			n++
		}
	}
	return n
}

// next takes the first queued plan of a kind in kinds.
func (v *viewPlans) next(kinds []string) (view.Plan, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for i, p := range v.queue {
		if slices.Contains(kinds, string(p.Kind)) {
			v.queue = slices.Delete(v.queue, i, i+1)
			return p, true
		}
	}
	return view.Plan{}, false
}

// noteViewReference derives plans from the view record of rec, a step of
// session s that converged cleanly (its record is the proxy's last one).
func (r *runner) noteViewReference(s *session, rec *StepRecord) {
	if r.views == nil || s.env.kube.view == nil || !convergedApply(rec) || !slices.ContainsFunc(r.faultKinds, viewKind) {
		return
	}
	recs, err := view.ReadRecord(bytes.NewReader(s.env.kube.lastView))
	if err != nil {
		r.cfg.Logger.Warn("view record of a reference step", "step", rec.Index, "err", err)
		return
	}
	if n := r.views.add(view.Analyze(recs, s.ns)); n > 0 {
		r.cfg.Logger.Info("perturbed re-runs derived from a reference step", "worker", rec.Worker, "step", rec.Index, "plans", n)
	}
}

// viewPlanFor replaces a drawn fault of the operator's view with the next
// plan derived from a reference step, when one is queued: the seeded draw
// still decides when a view fault comes, the reference decides which.
func (r *runner) viewPlanFor(p FaultPlan) FaultPlan {
	if r.views == nil || !viewKind(p.Kind) {
		return p
	}
	vp, ok := r.views.next(r.faultKinds)
	if !ok {
		return p
	}
	t := vp.Target
	q := FaultPlan{Kind: string(vp.Kind), Pick: p.Pick, Hold: p.Hold, View: &t}
	planView(nil, &q)
	return q
}
