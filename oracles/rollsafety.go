package oracles

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/model"
)

// NameRollSafety names the roll-safety oracle.
const NameRollSafety = "roll-safety"

// RollSafety judges the intermediate states of a planned operation (an apply or
// rollback step with no fault): a careful operator takes one server out of
// service at a time and waits until it serves and replicates again before it
// touches the next (a rolling restart, an upgrade). In the system monitor's
// readings (Transition.Samples), the members that were in sync when the
// transition began (Prev.System, else the first reading) must never be out of
// sync two at a time; out of sync is unreachable, or a replica whose link to its
// primary is down. Members that join during the step (a scale-up) and members
// removed by it are not counted, and re-creation steps are not judged (they
// replace every server at once by design). A reachable replica whose link is down
// because it now follows another primary than when it was last in sync is
// re-attaching after a switchover, which every replica does at once by design: it
// is not counted for repointGrace after its first such reading (a primary restarted
// under its replicas leaves them following the same address, and counts).
//
// Create it with NewRollSafety.
type RollSafety struct{}

// repointGrace bounds how long a replica re-attaching to a new primary is not counted
// as out of service.
const repointGrace = 5 * time.Second

// NewRollSafety returns the roll-safety oracle.
func NewRollSafety(Config) *RollSafety { return &RollSafety{} }

// Name is "roll-safety".
func (*RollSafety) Name() string { return NameRollSafety }

// inSync reports whether m serves: reachable, and a primary or a linked replica.
func inSync(m model.Member) bool {
	return m.Reachable && (m.Role == model.RolePrimary || (m.Role == model.RoleReplica && m.LinkUp))
}

// monitorLockedOut: the monitor could not authenticate (a password switch is
// under way), or had no credentials to try (the desired state names a missing
// Secret): the reading says nothing about whether the server serves.
func monitorLockedOut(m model.Member) bool {
	return !m.Reachable && (m.Unreachable == model.UnreachableAuth || m.Unreachable == model.UnreachableNoCredentials)
}

// Check judges t's readings.
func (*RollSafety) Check(ctx context.Context, t *model.Transition) []model.Finding {
	if t == nil || t.Step == nil || len(t.Step.Faults) > 0 || len(t.Samples) == 0 || ctx.Err() != nil {
		return nil
	}
	if k := t.Step.Kind; (k != model.StepApply && k != model.StepRollback) || Recreated(t) {
		return nil // a re-created custom resource takes every server down by design
	}
	start := &t.Samples[0]
	if t.Prev != nil && t.Prev.System != nil {
		start = t.Prev.System
	}
	// Members gone by the end were removed by the step (a scale-in): not counted.
	var kept map[string]bool
	if t.Curr != nil && t.Curr.System != nil {
		kept = map[string]bool{}
		for _, m := range t.Curr.System.Members {
			kept[m.Pod] = true
		}
	}
	steady := map[string]bool{}
	// synced is what each member followed when last in sync; repointed when a replica was
	// first seen re-attaching to another primary.
	synced := map[string]string{}
	repointed := map[string]time.Time{}
	for _, m := range start.Members {
		if inSync(m) && (kept == nil || kept[m.Pod]) {
			steady[m.Pod] = true
			synced[m.Pod] = m.Follows
		}
	}
	reattaching := func(m model.Member, at time.Time) bool {
		if !m.Reachable || m.Role != model.RoleReplica || m.LinkUp || m.Follows == "" || m.Follows == synced[m.Pod] {
			return false
		}
		first, ok := repointed[m.Pod]
		if !ok {
			repointed[m.Pod], first = at, at
		}
		return at.Sub(first) <= repointGrace
	}
	if len(steady) < 3 {
		// With two servers, one out of sync is all there can be.
		return nil
	}
	for i := range t.Samples {
		smp := &t.Samples[i]
		var out []string
		var ev []model.Evidence
		for _, m := range smp.Members {
			if steady[m.Pod] && inSync(m) {
				synced[m.Pod] = m.Follows
				delete(repointed, m.Pod)
			}
			if !steady[m.Pod] || inSync(m) || monitorLockedOut(m) || reattaching(m, smp.Taken) {
				continue
			}
			out = append(out, m.Pod)
			why := "replica link down"
			switch {
			case !m.Reachable:
				why = "unreachable: " + m.Error
			case m.Role == "":
				why = "no role reported"
			}
			ev = append(ev, model.Evidence{Object: m.Pod, Detail: fmt.Sprintf("%s at %s: %s", m.Pod, smp.Taken.Format("15:04:05.000"), why)})
		}
		if len(out) < 2 {
			continue
		}
		sort.Strings(out)
		return []model.Finding{{
			Oracle:    NameRollSafety,
			Severity:  model.SeverityError,
			Signature: model.Signature(NameRollSafety, "several-out-of-sync"),
			Summary: fmt.Sprintf("%d of the %d servers that were in sync were out of service at once during a planned operation (%s): an unsafe intermediate state",
				len(out), len(steady), strings.Join(out, ", ")),
			Evidence: ev,
		}}
	}
	return nil
}
