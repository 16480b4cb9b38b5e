package oracles

import (
	"context"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Recovery finds failures to roll back (OAT's and Acto's error-state recovery):
// after an alarm on step i, the campaign re-declares D(i-1) in a step of kind
// model.StepRollback, and the state reached must equal S(i-1), the state
// recorded after step i-1, before the failed step.
//
// Convention: for a rollback step, the campaign passes S(i-1) as
// Transition.Reference (Transition.Prev is S(i), the state that raised the
// alarm). Recovery judges only rollback steps with a Reference, and Differential
// skips them.
//
// The comparison is Differential's (masks, namespace normalization, pairing of
// generated names, ignored kinds, tolerated extra objects); each object that is
// missing, extra or different is a "failed to roll back" finding, one per kind
// and name stem.
//
// Create it with NewRecovery.
type Recovery struct{ cmp stateComparer }

// NewRecovery returns the recovery oracle configured by cfg.
func NewRecovery(cfg Config) *Recovery { return &Recovery{cmp: newStateComparer(cfg)} }

// Name is "recovery".
func (r *Recovery) Name() string { return NameRecovery }

// Check compares the state reached by a rollback with the state before the failed step.
func (r *Recovery) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Curr == nil || t.Reference == nil || t.Step == nil || t.Step.Kind != model.StepRollback || ctx.Err() != nil {
		return nil
	}
	pairs := r.cmp.compare(t.Curr, t.Reference, t.Masks, DefaultMasks())
	fs := r.cmp.findings(NameRecovery, pairs, "the state before the failed step")
	for i := range fs {
		fs[i].Summary = "failed to roll back: " + fs[i].Summary
	}
	return fs
}
