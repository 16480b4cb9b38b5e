package oracles

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/model"
)

// SplitBrain finds two primaries at once while a transition ran, in the system
// monitor's readings (Transition.Samples, in time order):
//
//   - role: two reachable members report the primary role in one reading and
//     both accept writes. A frozen (SIGSTOPped) or partitioned old primary is
//     unreachable, so it does not count; nor does a primary fenced by
//     min-replicas-to-write (min-slaves-to-write; the member's effective value,
//     else what both the previous and the desired configuration declare) with
//     fewer replicas connected than it requires, since it refuses writes; nor an
//     isolated one: no replica connected, not labelled primary, not selected by
//     the client Service — an old primary thawed or restarted in the moment
//     before the operator demotes it, or fresh servers before replication is set
//     up, which no new client reaches and which can acknowledge no replicated
//     write; nor a returning one, in the first reading where it answers again
//     after being unreachable (a reading takes time: a frozen server's answer
//     can arrive after it thawed, describing the replicas it had). What remains
//     is the bug: a replica promoted while the old primary still serves clients
//     or replicas, before it is demoted or fenced;
//   - label: two pods carry the role label with the primary value
//     (Config.RoleLabel, Config.RolePrimaryValue) in one reading, whether their
//     servers answer or not: a Service selecting by that label may route clients
//     to both;
//   - service (unless Config.DisableServiceSplitBrain): the client Service
//     selects two pods or more in one reading.
//
// Each is reported once per transition, with the first reading that shows it,
// the pods and how many readings did. The reading at snapshot time (Curr.System)
// is judged for labels always, and for roles and the Service only when the step
// timed out: after convergence the system-state oracle reports several
// primaries and a Service that selects more than the primary.
//
// Create it with NewSplitBrain.
type SplitBrain struct {
	label, value string
	service      bool
	configPath   jsonv.Path
}

// NewSplitBrain returns the split-brain oracle configured by cfg.
func NewSplitBrain(cfg Config) *SplitBrain {
	return &SplitBrain{
		label:      orDefault(cfg.RoleLabel, DefaultRoleLabel),
		value:      orDefault(cfg.RolePrimaryValue, DefaultRolePrimaryValue),
		service:    !cfg.DisableServiceSplitBrain,
		configPath: NewSystemState(cfg).configPath,
	}
}

// Name is "split-brain".
func (s *SplitBrain) Name() string { return NameSplitBrain }

// episode is one kind of split brain over a transition's readings.
type episode struct {
	first   *model.SystemSample
	pods    []string // in the first reading
	last    time.Time
	count   int
	allPods []string // over every reading that showed it
}

func (e *episode) see(smp *model.SystemSample, pods []string) {
	if e.first == nil {
		e.first, e.pods = smp, pods
	}
	e.last = smp.Taken
	e.count++
	for _, p := range pods {
		if !slices.Contains(e.allPods, p) {
			e.allPods = append(e.allPods, p)
		}
	}
}

// Check scans the readings of t.
func (s *SplitBrain) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || ctx.Err() != nil {
		return nil
	}
	samples := make([]*model.SystemSample, 0, len(t.Samples)+1)
	for i := range t.Samples {
		samples = append(samples, &t.Samples[i])
	}
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].Taken.Before(samples[j].Taken) })
	var final *model.SystemSample
	if t.Curr != nil && t.Curr.System != nil {
		final = t.Curr.System
		if n := len(samples); n > 0 && samples[n-1].Taken.Equal(final.Taken) {
			final = nil // already among the readings
		}
	}
	judgeFinal := t.Step == nil || t.Step.Unconverged()
	if len(samples) == 0 && final == nil {
		return nil
	}
	desiredCfg := s.fencing(t)
	var role, label, svc episode
	total, judged := len(samples), len(samples) // readings judged for labels; for roles and the Service
	if final != nil {
		samples = append(samples, final)
		total++
		if judgeFinal {
			judged++
		}
	}
	var prev *model.SystemSample
	for _, smp := range samples {
		isFinal := smp == final
		if !isFinal || judgeFinal {
			if p := s.writablePrimaries(smp, prev, desiredCfg); len(p) >= 2 {
				role.see(smp, p)
			}
			if s.service {
				if sel := podNames(smp.Selected); len(sel) >= 2 {
					svc.see(smp, sel)
				}
			}
		}
		if p := s.labelled(smp); len(p) >= 2 {
			label.see(smp, p)
		}
		prev = smp
	}
	fs := newFindingSet(NameSplitBrain)
	pods := podKeys(t.Curr)
	if role.count > 0 {
		ev := []model.Evidence{{Detail: role.when(judged)}}
		for _, m := range role.first.Members {
			if slices.Contains(role.pods, m.Pod) {
				ev = append(ev, model.Evidence{Object: pods["Pod/"+m.Pod], Path: "role", Actual: model.RolePrimary, Detail: describeMember(m) + labelNote(m, s.label)})
			}
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameSplitBrain, "role"),
			Summary:   fmt.Sprintf("split brain: %s reported the primary role at once, %s reachable (reading taken %s)", andList(role.pods), bothOrAll(len(role.pods)), role.first.Taken.Format("15:04:05.000")),
			Evidence:  ev,
		})
	}
	if label.count > 0 {
		ev := []model.Evidence{{Detail: label.when(total)}}
		for _, m := range label.first.Members {
			if slices.Contains(label.pods, m.Pod) {
				ev = append(ev, model.Evidence{Object: pods["Pod/"+m.Pod], Path: fmt.Sprintf("metadata.labels[%q]", s.label), Actual: s.value, Detail: describeMember(m)})
			}
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameSplitBrain, "label"),
			Summary:   fmt.Sprintf("split brain: %s were labelled %s=%s at once (reading taken %s)", andList(label.pods), s.label, s.value, label.first.Taken.Format("15:04:05.000")),
			Evidence:  ev,
		})
	}
	if svc.count > 0 {
		ev := []model.Evidence{
			{Object: pods["Service/"+svc.first.Service], Path: "endpoints", Actual: svc.pods, Detail: svc.when(judged)},
		}
		for _, m := range svc.first.Members {
			if slices.Contains(svc.pods, m.Pod) {
				ev = append(ev, model.Evidence{Object: pods["Pod/"+m.Pod], Path: "role", Actual: orDefault(m.Role, "none"), Detail: describeMember(m) + labelNote(m, s.label)})
			}
		}
		fs.add(model.Finding{
			Signature: model.Signature(NameSplitBrain, "service"),
			Summary:   fmt.Sprintf("split brain: client Service %s selected %s at once (reading taken %s)", orDefault(svc.first.Service, "?"), andList(svc.pods), svc.first.Taken.Format("15:04:05.000")),
			Evidence:  ev,
		})
	}
	return fs.list()
}

func (e *episode) when(total int) string {
	d := fmt.Sprintf("first seen in the reading taken %s; seen in %d of %s", e.first.Taken.Format("15:04:05.000"), e.count, plural(total, "reading"))
	if e.count > 1 {
		d += fmt.Sprintf(", the last taken %s (%s later)", e.last.Format("15:04:05.000"), e.last.Sub(e.first.Taken).Round(time.Millisecond))
	}
	if len(e.allPods) > len(e.pods) {
		d += "; pods involved: " + strings.Join(e.allPods, ", ")
	}
	return d
}

// labelled lists the pods whose role label says primary.
func (s *SplitBrain) labelled(smp *model.SystemSample) []string {
	var out []string
	for _, m := range smp.Members {
		if v, ok := m.Labels[s.label]; ok && v == s.value {
			out = append(out, m.Pod)
		}
	}
	return out
}

// fencing returns the number of connected replicas a primary needs to accept
// writes (min-replicas-to-write) as both the previous and the desired
// configuration declare it, the smaller of the two (0: no fence; a step that
// introduces the fence cannot count on it). A member's own effective value,
// when the monitor read it, takes precedence (see writablePrimaries).
func (s *SplitBrain) fencing(t *model.Transition) int {
	d := t.Desired
	if d == nil && t.Step != nil {
		d = t.Step.Desired
	}
	n := s.fence(d)
	if t.PrevDesired != nil {
		n = min(n, s.fence(t.PrevDesired))
	}
	return n
}

func (s *SplitBrain) fence(d model.Object) int {
	cfg, _ := jsonv.GetPath(d, s.configPath)
	m, _ := cfg.(map[string]any)
	for _, k := range fenceKeys() {
		if v, ok := scalarString(m[k]); ok {
			if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
				return n
			}
		}
	}
	return 0
}

// fenceKeys name the Valkey and Redis setting (and its old alias) that makes a
// primary refuse writes without enough connected replicas.
func fenceKeys() []string { return []string{"min-replicas-to-write", "min-slaves-to-write"} }

// writablePrimaries lists the reachable members that report the primary role
// and take writes: not fenced by min-replicas-to-write (the member's effective
// value when read, else desiredFence), and not isolated — a primary with no
// replica connected that the operator neither labels primary nor the client
// Service selects reaches no new client and acknowledges no replicated write
// (an old primary thawed or restarted before the operator demotes it, servers
// that start as primaries before the operator sets replication up) — nor
// returning: unreachable in the previous reading prev, its first answer may
// describe the state it froze in (replicas it has not yet noticed are gone)
// and the operator has had no chance to demote it.
func (s *SplitBrain) writablePrimaries(smp, prev *model.SystemSample, desiredFence int) []string {
	selected := podNames(smp.Selected)
	gone := map[string]bool{}
	if prev != nil {
		for _, m := range prev.Members {
			if !m.Reachable {
				gone[m.Pod] = true
			}
		}
	}
	var out []string
	for _, m := range smp.Primaries() {
		if gone[m.Pod] {
			continue
		}
		fence := desiredFence
		for _, k := range fenceKeys() {
			if v, ok := configValue(m.Config, k); ok {
				if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					fence = n
				}
				break
			}
		}
		if fence > 0 && m.Replicas < fence {
			continue
		}
		if m.Replicas == 0 && m.Labels[s.label] != s.value && !slices.Contains(selected, m.Pod) {
			continue
		}
		out = append(out, m.Pod)
	}
	return out
}

func bothOrAll(n int) string {
	if n == 2 {
		return "both"
	}
	return "all"
}

func labelNote(m model.Member, label string) string {
	if v, ok := m.Labels[label]; ok {
		return fmt.Sprintf(", labelled %s=%s", label, v)
	}
	return ""
}

func andList(l []string) string {
	switch len(l) {
	case 0:
		return "no pod"
	case 1:
		return l[0]
	case 2:
		return l[0] + " and " + l[1]
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}
