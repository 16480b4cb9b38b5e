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
// same. The result lists bug groups first, then misoperation groups, each
// ordered by the step where the group was first seen (worker sequences run in
// parallel, so steps compare by index, then worker), then by signature.
//
// A finding without a signature is grouped by oracle and summary.
func Group(findings []model.Finding) []AlarmGroup {
	type key struct {
		misop bool
		sig   string
	}
	// Visit findings in step order so that "first" means first seen.
	fs := append([]model.Finding(nil), findings...)
	sort.SliceStable(fs, func(i, j int) bool { return compareSteps(fs[i].Step, fs[j].Step) < 0 })

	by := map[key]*AlarmGroup{}
	seen := map[key]map[string]bool{}
	var order []key
	for _, f := range fs {
		sig := f.Signature
		if sig == "" {
			sig = model.Signature(f.Oracle, "summary:"+f.Summary)
		}
		k := key{f.Misoperation, sig}
		g := by[k]
		if g == nil {
			g = &AlarmGroup{
				Signature:    sig,
				Oracle:       f.Oracle,
				Severity:     f.Severity,
				Summary:      f.Summary,
				Evidence:     append([]model.Evidence(nil), f.Evidence...),
				Misoperation: f.Misoperation,
				Steps:        []string{},
			}
			if f.Misoperation && f.Cause != "" {
				// A group per cause: say the cause, list what the oracles saw.
				g.Oracle, g.Summary, g.Evidence = "misoperation", f.Cause, nil
			}
			by[k] = g
			seen[k] = map[string]bool{}
			order = append(order, k)
		}
		g.Count++
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
	out := make([]AlarmGroup, 0, len(order))
	for _, k := range order {
		out = append(out, *by[k])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Misoperation != b.Misoperation {
			return !a.Misoperation
		}
		if c := compareSteps(first(a.Steps), first(b.Steps)); c != 0 {
			return c < 0
		}
		return a.Signature < b.Signature
	})
	return out
}

// SplitGroups separates bug groups from misoperation groups, keeping order.
func SplitGroups(groups []AlarmGroup) (bugs, misoperations []AlarmGroup) {
	bugs, misoperations = []AlarmGroup{}, []AlarmGroup{}
	for _, g := range groups {
		if g.Misoperation {
			misoperations = append(misoperations, g)
		} else {
			bugs = append(bugs, g)
		}
	}
	return bugs, misoperations
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
