package failover

import (
	"fmt"
	"strings"
)

// PlanRoll returns the next step of a rolling restart (pods not at the
// StatefulSet's current revision): one pod at a time, only while every pod serves
// and every replica is in sync; replicas first, highest ordinal first; then a
// planned switchover away from the primary, which is then an ordinary outdated
// replica. A single-pod cluster restarts its primary in place (there is no one to
// hand over to). None when nothing is outdated.
func PlanRoll(v View) Action {
	v.Pods = sorted(v.Pods)
	var outdated []Pod
	for _, p := range v.Pods {
		if !p.UpToDate {
			outdated = append(outdated, p)
		}
	}
	if len(outdated) == 0 {
		return Action{Kind: None}
	}
	primary := v.find(v.Primary)
	if primary == nil || !primary.ServesAsMaster() || primary.Label != LabelPrimary {
		return Action{Kind: Wait, Reason: "rolling restart waits for a serving primary"}
	}
	// An outdated replica whose server does not run (never scheduled, still
	// starting, or crash-looping) serves nothing and holds no role in the
	// topology: waiting for it to serve an old template could last forever (a
	// template that asked for more than any node has leaves it Pending even
	// after the spec is rolled back). Delete it at once so the StatefulSet
	// re-creates it from the current template, as the roll would anyway.
	// The same for one whose server runs but which a stalled sidecar (an image
	// that cannot be pulled) keeps from ever becoming Ready.
	for i := len(outdated) - 1; i >= 0; i-- {
		p := outdated[i]
		if p.Name == primary.Name || p.Deleting {
			continue
		}
		if !p.Running && !p.Observed {
			return Action{Kind: DeletePod, Pod: p.Name, Reason: "rolling restart: replica at an old revision does not run (pending or crashed): replaced from the current template"}
		}
		if p.Stalled && !p.Ready {
			return Action{Kind: DeletePod, Pod: p.Name, Reason: "rolling restart: replica at an old revision has a container that cannot start (image pull or crash loop): replaced from the current template"}
		}
	}
	if len(v.Pods) < v.Replicas {
		return Action{Kind: Wait, Reason: fmt.Sprintf("rolling restart waits for all %d pods (have %d)", v.Replicas, len(v.Pods))}
	}
	var notReady []string
	for _, p := range v.Pods {
		inSync := p.Name == primary.Name || (p.Info.ReplicatingFrom(primary.IP, v.Port) && p.Info.MasterLinkUp)
		// An outdated primary whose server serves but which a stalled sidecar
		// keeps from ever becoming Ready (the case above, for the primary) is
		// not waited for: the roll switches over from it, and it is then an
		// outdated replica, replaced at once.
		stalledPrimary := p.Name == primary.Name && !p.UpToDate && p.Stalled
		if !p.Observed || (!p.Ready && !stalledPrimary) || p.Deleting || !inSync {
			notReady = append(notReady, p.Name)
		}
	}
	if len(notReady) > 0 {
		return Action{Kind: Wait, Reason: "rolling restart waits until every pod serves and is in sync: " + strings.Join(notReady, ", ")}
	}
	for i := len(outdated) - 1; i >= 0; i-- {
		if outdated[i].Name != primary.Name {
			return Action{Kind: DeletePod, Pod: outdated[i].Name, Reason: "rolling restart: replica at an old revision"}
		}
	}
	if len(v.Pods) == 1 {
		return Action{Kind: DeletePod, Pod: primary.Name, Reason: "rolling restart: single pod, restarted in place"}
	}
	t, ok := v.switchoverTarget(*primary, func(r Pod) bool { return r.UpToDate && r.Ordinal < v.Replicas })
	if !ok {
		return Action{Kind: Wait, Reason: "rolling restart: no up-to-date replica in sync can take over from the primary"}
	}
	return Action{Kind: Switchover, Pod: primary.Name, Target: t.Name, TargetIP: t.IP, Reason: "rolling restart: switch over before restarting the primary"}
}
