package oracles

import (
	"fmt"

	"github.com/gauntlet-dev/gauntlet/model"
)

// findingSet collects an oracle's findings for one transition, merging findings
// with the same signature (one bug seen on several objects of the step is one
// finding whose evidence names them all).
type findingSet struct {
	oracle  string
	order   []string
	m       map[string]*model.Finding
	more    map[string]int // merged findings beyond the first
	dropped map[string]int // evidence left out beyond maxEvidence
}

func newFindingSet(oracle string) *findingSet {
	return &findingSet{oracle: oracle, m: map[string]*model.Finding{}, more: map[string]int{}, dropped: map[string]int{}}
}

func (s *findingSet) add(f model.Finding) {
	f.Oracle = s.oracle
	if f.Severity == "" {
		f.Severity = model.SeverityError
	}
	if f.Signature == "" {
		f.Signature = model.Signature(s.oracle, f.Summary)
	}
	cur, ok := s.m[f.Signature]
	if !ok {
		g := f
		g.Evidence = nil
		cur = &g
		s.m[f.Signature] = cur
		s.order = append(s.order, f.Signature)
	} else {
		s.more[f.Signature]++
		if f.Severity == model.SeverityError {
			cur.Severity = model.SeverityError
		}
	}
	for _, e := range f.Evidence {
		if len(cur.Evidence) >= maxEvidence {
			s.dropped[f.Signature]++
			continue
		}
		cur.Evidence = append(cur.Evidence, e)
	}
}

func (s *findingSet) list() []model.Finding {
	if len(s.order) == 0 {
		return nil
	}
	out := make([]model.Finding, 0, len(s.order))
	for _, sig := range s.order {
		f := *s.m[sig]
		if n := s.more[sig]; n > 0 {
			f.Summary += fmt.Sprintf(" (and %d more like it)", n)
		}
		if n := s.dropped[sig]; n > 0 {
			f.Evidence = append(f.Evidence, model.Evidence{Detail: fmt.Sprintf("… %d more facts left out", n)})
		}
		out = append(out, f)
	}
	return out
}
