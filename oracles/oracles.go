// Package oracles turns a recorded transition (previous and desired state, the
// state reached, stability samples, a differential reference, faults and monitor
// samples) into findings. Oracles have no side effects: a campaign's results can
// be re-judged offline.
package oracles

import (
	"context"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Oracle judges one transition.
type Oracle interface {
	// Name is the oracle's name as it appears in findings ("health", "consistency", …).
	Name() string
	// Check returns the findings for t (none when it passes).
	Check(ctx context.Context, t *model.Transition) []model.Finding
}

// Func adapts a function to Oracle; targets register custom oracles with it.
type Func struct {
	OracleName string
	Fn         func(ctx context.Context, t *model.Transition) []model.Finding
}

// Name returns the oracle's name.
func (f Func) Name() string { return f.OracleName }

// Check runs the function.
func (f Func) Check(ctx context.Context, t *model.Transition) []model.Finding { return f.Fn(ctx, t) }

// Run applies every oracle to t and returns all findings, each stamped with the
// step and misoperation flag of t.
func Run(ctx context.Context, os []Oracle, t *model.Transition) []model.Finding {
	var out []model.Finding
	for _, o := range os {
		for _, f := range o.Check(ctx, t) {
			if f.Oracle == "" {
				f.Oracle = o.Name()
			}
			if t.Step != nil {
				f.Step = t.Step.ID()
				f.Misoperation = t.Step.Misoperation
			}
			if f.Severity == "" {
				f.Severity = model.SeverityError
			}
			out = append(out, f)
		}
	}
	return out
}

// Recreated reports whether the custom resource under test was deleted and
// created again during t (its UID changed): the system was torn down and
// rebuilt, a planned total outage whose data the operator need not keep.
func Recreated(t *model.Transition) bool {
	if t == nil || t.Prev == nil || t.Curr == nil {
		return false
	}
	uid := func(s *model.Snapshot) string {
		cr := s.CRObject()
		if cr == nil {
			return ""
		}
		md, _ := cr["metadata"].(map[string]any)
		u, _ := md["uid"].(string)
		return u
	}
	a, b := uid(t.Prev), uid(t.Curr)
	return a != "" && b != "" && a != b
}
