package campaign

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/oracles"
)

// generatedMasks are the fields the operator was found to generate anew on
// every creation of a desired state (random passwords, ACLs, hashes of them):
// two fresh creations of the same desired state differ there. Learned during
// the campaign, they mask the state oracles' comparisons from then on.
type generatedMasks struct {
	mu    sync.Mutex
	masks []string
}

// add records masks and returns those not known before.
func (g *generatedMasks) add(masks []string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var added []string
	for _, m := range masks {
		if !slices.Contains(g.masks, m) {
			g.masks = append(g.masks, m)
			added = append(added, m)
		}
	}
	slices.Sort(g.masks)
	return added
}

func (g *generatedMasks) list() []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.masks)
}

// masksNow are the masks a transition is judged with: calibration's, plus the
// generated fields learned so far.
func (r *runner) masksNow() []string {
	g := r.generated.list()
	if len(g) == 0 {
		return r.masks
	}
	return append(slices.Clone(r.masks), g...)
}

// learnGenerated runs on a rollback that re-created the custom resource (tr,
// the state reached being tr.Curr) whose recovery comparison finds
// differences: it creates the same desired state once more on a fresh
// namespace, and the fields in which the two fresh creations differ are
// values the operator generates (the third-party operator's passwords, ACLs
// and hash annotations, judged as recovery failures night after night until
// masked one by one). Those are added to tr.Masks and to the campaign's
// masks, and a warning says which were masked. It returns nil when nothing
// was learned.
func (s *session) learnGenerated(ctx context.Context, tr *model.Transition) *model.Finding {
	if s.r.generated == nil || tr.Step == nil || tr.Step.Kind != model.StepRollback || tr.Reference == nil || tr.Curr == nil {
		return nil
	}
	if len(oracles.NewRecovery(OracleConfig(s.r.target)).Check(ctx, tr)) == 0 {
		return nil
	}
	other, err := s.freshCreation(ctx, "g", tr.Desired)
	if err != nil {
		s.r.cfg.Logger.Warn("generated values", "err", err)
		return nil
	}
	learned := generatedFields(tr.Curr, other, tr.Masks)
	if len(learned) == 0 {
		return nil
	}
	added := s.r.generated.add(learned)
	tr.Masks = append(slices.Clone(tr.Masks), learned...)
	if len(added) == 0 {
		return nil
	}
	return &model.Finding{Oracle: "generated", Severity: model.SeverityWarning,
		Signature: model.Signature("generated", strings.Join(added, ",")),
		Summary: fmt.Sprintf("masked %d field(s) the operator generates anew on every creation (two fresh creations of this desired state differ there): %s",
			len(added), strings.Join(added, ", "))}
}

// generatedFields are the masks that two fresh creations of one desired state
// (a, and b rebased onto a's namespace) need beyond known, the masks in force.
func generatedFields(a, b *model.Snapshot, known []string) []string {
	var out []string
	for _, m := range oracles.LearnMasks(a, b) {
		// Field masks only: an object one creation has and the other has
		// not ("Kind/stem") is left to the oracles (a leftover is a bug).
		if strings.Count(m, "/") >= 2 && !slices.Contains(known, m) {
			out = append(out, m)
		}
	}
	return out
}

// freshCreation declares d on a fresh namespace (named with tag), waits for it
// to converge, and returns its state rebased onto s's namespace; the namespace
// is deleted before it returns.
func (s *session) freshCreation(ctx context.Context, tag string, d model.Object) (*model.Snapshot, error) {
	fresh, err := s.r.newSession(ctx, s.env, tag)
	if err != nil {
		return nil, fmt.Errorf("fresh namespace: %w", err)
	}
	defer fresh.close(ctx)
	if _, _, _, err := fresh.declare(ctx, d, false); err != nil {
		return nil, fmt.Errorf("fresh creation: %w", err)
	}
	return rebase(fresh.snapshot(ctx), fresh.ns, s.ns), nil
}
