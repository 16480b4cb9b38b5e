package reports

import (
	"sort"
	"strconv"
	"strings"

	"github.com/gauntlet-dev/gauntlet/model"
)

// Group folds findings into alarm groups: findings that share a signature are
// one group (one bug, however many steps it failed). Findings raised on
// misoperation steps are grouped apart from bugs even when the signature is the
// same, and so are warnings (what the campaign could not do: a refused desired
// state, a fault with nothing to hit), which are not alarms. The result lists
// bug groups first, then misoperation groups, then warning groups, each
// ordered by the step where the group was first seen (worker sequences run in
// parallel, so steps compare by index, then worker), then by signature. Bug
// and misoperation groups are numbered from 1 in that order (AlarmGroup.ID:
// the results folder's alarms/ID); warning groups have no number.
//
// A finding without a signature is grouped by oracle and summary. This is the
// one grouping: the campaign's result, summary.json, report.html and junit.xml
// all take their groups from it.
func Group(findings []model.Finding) []AlarmGroup {
	gs := GroupFindings(findings)
	out := make([]AlarmGroup, len(gs))
	for i, g := range gs {
		out[i] = g.AlarmGroup
	}
	return out
}

// Grouped is one alarm group with its findings, in step order.
type Grouped struct {
	AlarmGroup
	Findings []model.Finding
}

// groupKey is what puts two findings in one group.
type groupKey struct {
	misop, warning bool
	sig            string
}

// signatureOf is f's signature, or for a finding without one its oracle and summary's.
func signatureOf(f model.Finding) string {
	if f.Signature != "" {
		return f.Signature
	}
	return model.Signature(f.Oracle, "summary:"+f.Summary)
}

func keyOf(f model.Finding) groupKey {
	return groupKey{misop: f.Misoperation, warning: f.Severity == model.SeverityWarning, sig: signatureOf(f)}
}

func (g AlarmGroup) key() groupKey {
	return groupKey{misop: g.Misoperation, warning: g.Warning(), sig: g.Signature}
}

// Warning reports whether the group holds warnings (not alarms).
func (g AlarmGroup) Warning() bool { return g.Severity == model.SeverityWarning }

// GroupFindings is Group with each group's findings.
func GroupFindings(findings []model.Finding) []Grouped {
	// Visit findings in step order so that "first" means first seen.
	fs := append([]model.Finding(nil), findings...)
	sort.SliceStable(fs, func(i, j int) bool { return compareSteps(fs[i].Step, fs[j].Step) < 0 })

	by := map[groupKey]*Grouped{}
	seen := map[groupKey]map[string]bool{}
	var order []groupKey
	for _, f := range fs {
		k := keyOf(f)
		g := by[k]
		if g == nil {
			g = &Grouped{AlarmGroup: AlarmGroup{
				Signature:    k.sig,
				Oracle:       f.Oracle,
				Severity:     f.Severity,
				Summary:      f.Summary,
				Evidence:     append([]model.Evidence(nil), f.Evidence...),
				Misoperation: f.Misoperation,
				Steps:        []string{},
			}}
			if f.Misoperation && f.Cause != "" {
				// A group per cause: say the cause, list what the oracles saw.
				g.Oracle, g.Summary, g.Evidence = "misoperation", f.Cause, nil
			}
			by[k] = g
			seen[k] = map[string]bool{}
			order = append(order, k)
		}
		g.Count++
		g.Findings = append(g.Findings, f)
		if f.Misoperation && f.Cause != "" && len(g.Evidence) < 12 && !hasDetail(g.Evidence, f.Summary) {
			g.Evidence = append(g.Evidence, model.Evidence{Detail: f.Oracle + ": " + f.Summary})
		}
		if f.Severity == model.SeverityError {
			g.Severity = model.SeverityError
		}
		if !seen[k][f.Step] {
			seen[k][f.Step] = true
			g.Steps = append(g.Steps, f.Step)
		}
	}
	out := make([]Grouped, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	rank := func(g AlarmGroup) int {
		switch {
		case g.Warning():
			return 2
		case g.Misoperation:
			return 1
		}
		return 0
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if ra, rb := rank(a.AlarmGroup), rank(b.AlarmGroup); ra != rb {
			return ra < rb
		}
		if c := compareSteps(first(a.Steps), first(b.Steps)); c != 0 {
			return c < 0
		}
		return a.Signature < b.Signature
	})
	for i := range out {
		if !out[i].Warning() {
			out[i].AlarmGroup.ID = i + 1
		}
	}
	return out
}

// SplitGroups separates bug groups from misoperation groups and warning
// groups, keeping order.
func SplitGroups(groups []AlarmGroup) (bugs, misoperations, warnings []AlarmGroup) {
	bugs, misoperations, warnings = []AlarmGroup{}, []AlarmGroup{}, []AlarmGroup{}
	for _, g := range groups {
		switch {
		case g.Warning():
			warnings = append(warnings, g)
		case g.Misoperation:
			misoperations = append(misoperations, g)
		default:
			bugs = append(bugs, g)
		}
	}
	return bugs, misoperations, warnings
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// parseStepID reads "w<worker>/s<index>".
func parseStepID(id string) (worker, index int, ok bool) {
	w, s, found := strings.Cut(id, "/")
	if !found || !strings.HasPrefix(w, "w") || !strings.HasPrefix(s, "s") {
		return 0, 0, false
	}
	worker, err1 := strconv.Atoi(w[1:])
	index, err2 := strconv.Atoi(s[1:])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return worker, index, true
}

// compareSteps orders step IDs by index, then worker; IDs that are not
// "w<n>/s<n>" sort after all others, by text.
func compareSteps(a, b string) int {
	aw, ai, aok := parseStepID(a)
	bw, bi, bok := parseStepID(b)
	switch {
	case aok && bok:
		if ai != bi {
			return cmpInt(ai, bi)
		}
		return cmpInt(aw, bw)
	case aok:
		return -1
	case bok:
		return 1
	}
	return strings.Compare(a, b)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// hasDetail reports whether evidence already holds a line ending in detail.
func hasDetail(ev []model.Evidence, detail string) bool {
	for _, e := range ev {
		if strings.HasSuffix(e.Detail, ": "+detail) {
			return true
		}
	}
	return false
}
