package oracles

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Differential finds level-triggering violations: the state reached through the
// history of a worker, t.Curr, must equal t.Reference, the state reached by
// declaring the same desired state from S0 on a fresh namespace or cluster.
//
// Both states are compared after masking DefaultMasks, Config.Masks and the
// masks learned by calibration (t.Masks, see LearnMasks), with the test
// namespace normalized (each snapshot's own, taken from its CR key), kinds of
// Config.IgnoreKinds left out, ReplicaSets scaled to zero (old revisions) left
// out, and objects with generated names (pods of ReplicaSets, objects created
// with generateName, random suffixes) paired by owner and pod-template-hash, then
// by name stem, instead of by name. Objects of Config.TolerateExtra may exist in
// t.Curr only (Kubernetes keeps them on purpose: retained claims).
//
// Findings, one per kind and name stem (so the pods of one StatefulSet are one
// finding): an object missing from the state reached, an extra object, or an
// object whose fields differ (evidence: path, the value reached as Actual, the
// reference value as Expected).
//
// Differential does not judge rollback steps: for those, t.Reference holds the
// state before the failed step, which Recovery judges.
//
// Create it with NewDifferential.
type Differential struct{ cmp stateComparer }

// NewDifferential returns the differential oracle configured by cfg.
func NewDifferential(cfg Config) *Differential { return &Differential{cmp: newStateComparer(cfg)} }

// Name is "differential".
func (d *Differential) Name() string { return NameDifferential }

// Check compares t.Curr with t.Reference.
func (d *Differential) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Curr == nil || t.Reference == nil || ctx.Err() != nil {
		return nil
	}
	if t.Step != nil && t.Step.Kind == model.StepRollback {
		return nil
	}
	pairs := d.cmp.compare(t.Curr, t.Reference, t.Masks, DefaultMasks())
	return d.cmp.findings(NameDifferential, pairs, "the reference state (the same desired state reached from S0 on a fresh namespace)")
}

// stateComparer holds the settings shared by the state oracles.
type stateComparer struct {
	masks    []string
	ignore   []string
	tolerate []maskRule
}

func newStateComparer(cfg Config) stateComparer {
	tol := cfg.TolerateExtra
	if tol == nil {
		tol = DefaultTolerateExtra()
	}
	var rules []maskRule
	for _, r := range compileMasks(tol) {
		if r.whole {
			rules = append(rules, r)
		}
	}
	return stateComparer{masks: cfg.Masks, ignore: cfg.IgnoreKinds, tolerate: rules}
}

func (c stateComparer) options(learned []string, base []string) viewOptions {
	return newViewOptions(c.ignore, base, c.masks, learned)
}

func (c stateComparer) compare(reached, ref *model.Snapshot, learned, base []string) []objPair {
	o := c.options(learned, base)
	return compareViews(buildView(reached, o), buildView(ref, o))
}

func (c stateComparer) tolerated(v *objView) bool {
	for _, r := range c.tolerate {
		if r.appliesTo(v.kind, v.name) {
			return true
		}
	}
	return false
}

// findings turns compared pairs into findings (A: the state reached, B: ref).
func (c stateComparer) findings(oracle string, pairs []objPair, ref string) []model.Finding {
	fs := newFindingSet(oracle)
	for _, p := range pairs {
		switch {
		case p.a == nil:
			b := p.b
			fs.add(model.Finding{
				Signature: model.Signature(oracle, "missing", b.kind, b.stem),
				Summary:   fmt.Sprintf("%s %s is missing from the state reached but exists in %s", b.kind, b.name, ref),
				Evidence:  []model.Evidence{{Object: b.key, Expected: "present", Actual: "absent"}},
			})
		case p.b == nil:
			a := p.a
			if c.tolerated(a) {
				continue
			}
			fs.add(model.Finding{
				Signature: model.Signature(oracle, "extra", a.kind, a.stem),
				Summary:   fmt.Sprintf("%s %s exists in the state reached but not in %s", a.kind, a.name, ref),
				Evidence:  []model.Evidence{{Object: a.key, Expected: "absent", Actual: "present"}},
			})
		default:
			a := p.a
			first := p.changes[0]
			more := ""
			if n := len(p.changes) - 1; n > 0 {
				more = fmt.Sprintf(" and %d more field(s)", n)
			}
			ev := make([]model.Evidence, 0, len(p.changes))
			for _, ch := range p.changes {
				ev = append(ev, model.Evidence{Object: a.key, Path: ch.Path, Actual: ch.A, Expected: ch.B, Detail: lineDiff(ch.A, ch.B)})
			}
			fs.add(model.Finding{
				Signature: model.Signature(oracle, "differs", a.kind, a.stem),
				Summary: fmt.Sprintf("%s %s differs from %s: %s is %s, expected %s%s",
					a.kind, a.name, ref, orDefault(first.Path, "(object)"), renderAbsent(first.A), renderAbsent(first.B), more),
				Evidence: ev,
			})
		}
	}
	return fs.list()
}

// lineDiff describes, for two multi-line strings (configuration files), the
// lines only one of them has.
func lineDiff(a, b any) string {
	as, ok1 := a.(string)
	bs, ok2 := b.(string)
	if !ok1 || !ok2 || !strings.Contains(as, "\n") && !strings.Contains(bs, "\n") {
		return ""
	}
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	ca, cb := count(as), count(bs)
	var onlyA, onlyB []string
	for _, l := range strings.Split(as, "\n") {
		if cb[l] > 0 {
			cb[l]--
		} else if l != "" {
			onlyA = append(onlyA, l)
		}
	}
	for _, l := range strings.Split(bs, "\n") {
		if ca[l] > 0 {
			ca[l]--
		} else if l != "" {
			onlyB = append(onlyB, l)
		}
	}
	var parts []string
	if len(onlyA) > 0 {
		parts = append(parts, "lines only in the state reached: "+strings.Join(limitStrings(onlyA, 10), " | "))
	}
	if len(onlyB) > 0 {
		parts = append(parts, "lines only in the expected state: "+strings.Join(limitStrings(onlyB, 10), " | "))
	}
	return strings.Join(parts, "; ")
}

func renderAbsent(v any) string {
	if v == nil {
		return "absent"
	}
	return render(v)
}

// LearnMasks compares snapshots of the same desired state reached in separate
// runs (calibration: the seed, or any D, declared twice or more on fresh
// namespaces) and returns masks for every field that differs between them beyond
// DefaultMasks, for Transition.Masks. Namespaces are normalized and objects with
// generated names paired as Differential does. Paths are generalized: list
// indices become [*], and object names become their stem ("cache-0" → "cache-*",
// generated suffixes → "*"), or "*" when the field varies in objects of the kind
// with different stems (e.g. "Pod/*/status.podIP"). An object found in some runs
// only is masked whole ("Kind/stem"). The result is sorted and has no duplicates;
// fewer than two snapshots learn nothing.
func LearnMasks(runs ...*model.Snapshot) []string {
	var snaps []*model.Snapshot
	for _, r := range runs {
		if r != nil {
			snaps = append(snaps, r)
		}
	}
	if len(snaps) < 2 {
		return nil
	}
	o := newViewOptions(nil, DefaultMasks())
	base := buildView(snaps[0], o)
	fields := map[string]map[string]bool{} // "Kind\x00path" -> stems
	whole := map[string]bool{}
	for _, s := range snaps[1:] {
		for _, p := range compareViews(base, buildView(s, o)) {
			v := p.side()
			if p.a == nil || p.b == nil {
				whole[v.kind+"/"+v.stem] = true
				continue
			}
			for _, ch := range p.changes {
				k := v.kind + "\x00" + GeneralizePath(ch.Path)
				if fields[k] == nil {
					fields[k] = map[string]bool{}
				}
				fields[k][v.stem] = true
			}
		}
	}
	set := map[string]bool{}
	for m := range whole {
		set[m] = true
	}
	for k, stems := range fields {
		kind, path, _ := strings.Cut(k, "\x00")
		if path == "" {
			continue
		}
		if len(stems) > 1 {
			set[kind+"/*/"+path] = true
			continue
		}
		for stem := range stems {
			set[kind+"/"+stem+"/"+path] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
