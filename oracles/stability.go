package oracles

import (
	"context"
	"fmt"
	"strings"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// Stability checks Eventually Stable Reconciliation (Anvil) and finds Kivi's
// oscillations: once a step has converged, the state must stay put. t.Stability
// holds the snapshots sampled during the stability window after convergence; the
// masked state of each must equal the one before it, starting from t.Curr.
//
// Masks are Differential's except metadata.uid, so an object deleted and
// re-created during the window counts as a change. Findings, one per kind and name
// stem, list every field that changed (or object that appeared or disappeared)
// with the number of changes and the sequence of values; a value that comes back
// is reported as an oscillation, otherwise as drift.
//
// Create it with NewStability.
type Stability struct{ cmp stateComparer }

// NewStability returns the stability oracle configured by cfg.
func NewStability(cfg Config) *Stability { return &Stability{cmp: newStateComparer(cfg)} }

// Name is "stability".
func (s *Stability) Name() string { return NameStability }

// stabilityMasks are DefaultMasks but the uid.
func stabilityMasks() []string {
	var out []string
	for _, m := range DefaultMasks() {
		if m != "metadata.uid" {
			out = append(out, m)
		}
	}
	return out
}

type fieldHistory struct {
	obj, kind, name, stem, path string
	values                      []any // the value at convergence, then after each change
	changes                     int
}

// Check compares t.Curr and the samples of t.Stability in order.
func (s *Stability) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Curr == nil || len(t.Stability) == 0 || ctx.Err() != nil {
		return nil
	}
	o := s.cmp.options(t.Masks, stabilityMasks())
	samples := []*model.Snapshot{t.Curr}
	for _, st := range t.Stability {
		if st != nil {
			samples = append(samples, st)
		}
	}
	views := make([][]*objView, len(samples))
	for i, sn := range samples {
		views[i] = buildView(sn, o)
	}
	hist := map[string]*fieldHistory{}
	var order []string
	record := func(v *objView, path string, a, b any) {
		k := v.kind + "|" + v.ident() + "|" + path
		h, ok := hist[k]
		if !ok {
			h = &fieldHistory{obj: v.key, kind: v.kind, name: v.name, stem: v.stem, path: path, values: []any{a}}
			hist[k] = h
			order = append(order, k)
		}
		h.values = append(h.values, b)
		h.changes++
	}
	for i := 1; i < len(views); i++ {
		for _, p := range compareViews(views[i-1], views[i]) {
			switch {
			case p.a == nil:
				record(p.b, "", "absent", "present")
			case p.b == nil:
				record(p.a, "", "present", "absent")
			default:
				for _, ch := range p.changes {
					record(p.a, ch.Path, ch.A, ch.B)
				}
			}
		}
	}
	fs := newFindingSet(NameStability)
	window := len(samples) - 1
	for _, k := range order {
		h := hist[k]
		osc := oscillates(h.values)
		what := "drifted"
		if osc {
			what = "oscillated"
		}
		field := h.path
		if field == "" {
			field = "the object"
		}
		seq := make([]string, 0, len(h.values))
		for i, v := range h.values {
			if i == 8 {
				seq = append(seq, "…")
				break
			}
			seq = append(seq, renderAbsent(v))
		}
		how := fmt.Sprintf("%s %s, changing %s in %s", field, what, times(h.changes), plural(window, "sample"))
		if h.path == "metadata.uid" {
			how = "it was deleted and re-created"
			if h.changes > 1 {
				how += " " + times(h.changes)
			}
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameStability, h.kind, h.stem),
			Summary:   fmt.Sprintf("%s %s did not stay stable after convergence: %s", h.kind, h.name, how),
			Evidence: []model.Evidence{{
				Object: h.obj, Path: h.path, Expected: h.values[0], Actual: h.values[len(h.values)-1],
				Detail: fmt.Sprintf("%s, changing %s: %s", what, times(h.changes), strings.Join(seq, " → ")),
			}},
		})
	}
	return fs.list()
}

// oscillates reports whether a value comes back after the value changed.
func oscillates(vals []any) bool {
	for i := 2; i < len(vals); i++ {
		for j := 0; j < i-1; j++ {
			if jsonv.Equal(vals[i], vals[j]) && !jsonv.Equal(vals[i], vals[i-1]) {
				return true
			}
		}
	}
	return false
}
