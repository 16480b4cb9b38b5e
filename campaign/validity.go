package campaign

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/gauntlet-dev/gauntlet/inputgen"
	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// validator checks desired states as the API server would (schema and CEL
// rules, transition rules on update). It is built once per runner from the
// target's CRD; nil when the target has none the local validator can read.
type validator struct {
	once sync.Once
	val  *inputgen.LocalValidator
}

// validator builds the validator on first use (r.cfg.Logger is told when it cannot).
func (r *runner) validator() *inputgen.LocalValidator {
	if r.val == nil {
		return nil // a replay: it declares recorded states
	}
	r.val.once.Do(func() {
		s, err := r.target.Schema()
		if err != nil {
			r.cfg.Logger.Warn("no local validation of desired states against the accumulated state", "err", err)
			return
		}
		if r.val.val, err = inputgen.NewLocalValidator(s); err != nil {
			r.cfg.Logger.Warn("no local validation of desired states against the accumulated state", "err", err)
		}
	})
	return r.val.val
}

// invalidStates counts the states of a test case, rendered on base, that the
// API server would refuse: the first as an update of live (the desired state
// the custom resource holds; a create on a re-creating case), each later one
// as an update of the one before.
func invalidStates(ctx context.Context, v *inputgen.LocalValidator, tc *inputgen.TestCase, base, live model.Object) (int, error) {
	states, err := tc.Apply(base)
	if err != nil {
		return 0, err
	}
	n, prev := 0, live
	for _, st := range states {
		var err error
		if tc.Recreate {
			err = v.ValidateCreate(ctx, st)
		} else {
			err = v.ValidateUpdate(ctx, st, prev)
		}
		if err != nil {
			n++
		}
		prev = st
	}
	return n, nil
}

// revert is one value an earlier test case left in the accumulated state,
// and how to put the seed's back.
type revert struct {
	path string // dotted, for the log and the report
	ptr  string // JSON pointer
	seed any    // the seed's value (nil: absent)
}

func (rv revert) apply(obj model.Object) {
	if rv.seed == nil {
		_ = jsonv.Remove(obj, rv.ptr)
		return
	}
	_ = jsonv.Set(obj, rv.ptr, jsonv.Copy(rv.seed))
}

// resolveBase re-solves a valid test case's cross-field rules
// (x-kubernetes-validations) on the state it lands on: the worker's
// accumulated desired state base, not the seed the plan solved them on. When
// a state of the case would be refused on base, the values earlier test cases
// left there (fields where base differs from seed and the case does not set)
// are put back to the seed's, one at a time and then all together, and the
// base with the fewest refused states is returned, with what was reverted
// (empty when base stands). Bundled operator, seed 1: replicas 2 refused
// because an earlier case had set podDisruptionBudget.maxUnavailable 2; the
// case is a valid change of the state where maxUnavailable is the seed's.
// Misoperations are left as they are.
func resolveBase(ctx context.Context, v *inputgen.LocalValidator, tc *inputgen.TestCase, base, seed model.Object) (model.Object, []string) {
	if v == nil || tc.Label == inputgen.Misoperation || seed == nil {
		return base, nil
	}
	bad, err := invalidStates(ctx, v, tc, base, base)
	if err != nil || bad == 0 {
		return base, nil
	}
	var own []string
	for _, c := range append(append([]inputgen.Change{}, tc.Setup...), stepChanges(tc)...) {
		own = append(own, c.Path)
	}
	var cands []revert
	for _, c := range jsonv.DiffWith(get(seed, "spec"), get(base, "spec"), jsonv.DiffOptions{Lists: jsonv.ListsWhole}) {
		toks, ok := jsonv.KeyPath("spec").Join(c.Path).Tokens()
		if !ok {
			continue
		}
		ptr := jsonv.Pointer(toks)
		if overlaps(ptr, own) {
			continue
		}
		cands = append(cands, revert{path: jsonv.KeyPath("spec").Join(c.Path).String(), ptr: ptr, seed: c.A})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].ptr < cands[j].ptr })
	best, bestBad, bestWhat := base, bad, []string(nil)
	try := func(rvs []revert) bool {
		b := jsonv.CopyMap(base)
		for _, rv := range rvs {
			rv.apply(b)
		}
		n, err := invalidStates(ctx, v, tc, b, base)
		if err != nil || n >= bestBad {
			return false
		}
		best, bestBad, bestWhat = b, n, nil
		for _, rv := range rvs {
			bestWhat = append(bestWhat, rv.path)
		}
		return n == 0
	}
	for _, rv := range cands {
		if try([]revert{rv}) {
			return best, bestWhat
		}
	}
	if len(cands) > 1 {
		try(cands)
	}
	return best, bestWhat
}

// stepChanges lists every change of a test case's steps.
func stepChanges(tc *inputgen.TestCase) []inputgen.Change {
	var out []inputgen.Change
	for _, st := range tc.Steps {
		out = append(out, st.Changes...)
	}
	return out
}

// overlaps reports whether JSON pointer p is one of ptrs, lies below one or
// holds one.
func overlaps(p string, ptrs []string) bool {
	for _, q := range ptrs {
		if p == q || strings.HasPrefix(p, q+"/") || strings.HasPrefix(q, p+"/") {
			return true
		}
	}
	return false
}

// landOn is the base a test case starting now is rendered on: the worker's
// accumulated desired state prevD, with the values earlier cases left that
// would make the case refused put back to the seed's (see resolveBase).
func (r *runner) landOn(ctx context.Context, w int, tc *inputgen.TestCase, prevD model.Object) model.Object {
	base, reverted := resolveBase(ctx, r.validator(), tc, prevD, r.base)
	if len(reverted) > 0 {
		r.cfg.Logger.Info(fmt.Sprintf("test case %s re-solved on the accumulated state: %s put back to the seed's value so that the API server accepts it", tc.ID, strings.Join(reverted, ", ")),
			"worker", w)
	}
	return base
}
