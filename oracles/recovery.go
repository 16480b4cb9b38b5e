package oracles

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"

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
// Which member holds a role (the primary, the leader) is history, not state:
// an operator may fail over before it rolls a primary back. Role values are
// compared as a set over the members of one kind and stem, not per member
// (see movedRoles).
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
	pairs := movedRoles(r.cmp.compare(t.Curr, t.Reference, t.Masks, DefaultMasks()))
	fs := r.cmp.findings(NameRecovery, pairs, "the state before the failed step")
	for i := range fs {
		fs[i].Summary = "failed to roll back: " + fs[i].Summary
	}
	return fs
}

// movedRoles drops the differences that only say a role moved between the
// members of a set (pods of one kind and name stem): a field whose values,
// over the members that differ there, are the same multiset in both states
// (cache-0 primary and cache-1 replica before, the other way round after),
// and then every value that names one of those members where the other state
// names another (the CR's status.primary, a condition's message, the client
// Service's endpoint). Pairs left with no difference are dropped.
func movedRoles(pairs []objPair) []objPair {
	type at struct{ pair, change int }
	groups := map[string][]at{}
	for i, p := range pairs {
		if p.a == nil || p.b == nil {
			continue
		}
		for j, ch := range p.changes {
			k := p.a.stemID() + "|" + ch.Path
			groups[k] = append(groups[k], at{i, j})
		}
	}
	drop := map[at]bool{}
	var members []string
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		var as, bs []string
		for _, x := range g {
			ch := pairs[x.pair].changes[x.change]
			as, bs = append(as, canonical(ch.A)), append(bs, canonical(ch.B))
		}
		sort.Strings(as)
		sort.Strings(bs)
		if !slices.Equal(as, bs) {
			continue
		}
		for _, x := range g {
			drop[x] = true
			members = append(members, pairs[x.pair].a.name)
		}
	}
	if len(drop) == 0 {
		return pairs
	}
	slices.Sort(members)
	members = slices.Compact(members)
	// Longest first, so that cache-10 is not read as cache-1 and a 0.
	sort.SliceStable(members, func(i, j int) bool { return len(members[i]) > len(members[j]) })
	var out []objPair
	for i, p := range pairs {
		if p.a == nil || p.b == nil {
			out = append(out, p)
			continue
		}
		var kept []Change
		for j, ch := range p.changes {
			if drop[at{i, j}] || namesMoved(ch.A, ch.B, members) {
				continue
			}
			kept = append(kept, ch)
		}
		if len(kept) > 0 {
			p.changes = kept
			out = append(out, p)
		}
	}
	return out
}

// namesMoved reports whether a and b differ only in which members they name:
// replacing, in a, the member names it holds by those b holds at the same
// places gives b.
func namesMoved(a, b any, members []string) bool {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 || as == bs {
		return false
	}
	return memberPattern(as, members) == memberPattern(bs, members)
}

// memberPattern replaces every member name in s by a placeholder.
func memberPattern(s string, members []string) string {
	for _, m := range members {
		s = strings.ReplaceAll(s, m, "\x00member\x00")
	}
	return s
}

// canonical is a value's JSON text (map keys sorted), for multiset comparison.
func canonical(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
