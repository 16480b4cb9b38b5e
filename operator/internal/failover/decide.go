package failover

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// Role label values (the same as the API's).
const (
	LabelPrimary = "primary"
	LabelReplica = "replica"
)

// Pod is what the operator knows about one Valkey pod in one pass.
type Pod struct {
	Name    string
	Ordinal int
	IP      string
	// Running: the Valkey container runs and the pod has an IP.
	Running bool
	// Deleting: the pod has a deletion timestamp.
	Deleting bool
	// Ready: Kubernetes reports the pod Ready.
	Ready bool
	// Stalled: a container of the pod waits in a state it does not leave by
	// itself (its image cannot be pulled, a crash loop, a configuration
	// error), so the pod will not become Ready from its template.
	Stalled bool
	// Label is the value of the role label ("" when absent).
	Label string
	// UpToDate: the pod runs the StatefulSet's current revision.
	UpToDate bool
	// Observed: INFO succeeded in this pass; Info holds it.
	Observed bool
	Info     valkey.Info
	// Down: the health checks say the pod is subjectively down; DownSince is when
	// its failures started.
	Down      bool
	DownSince time.Time
	// Age is how long the pod object has existed.
	Age time.Duration
}

// Unknown: the pod should answer but did not, and is not down yet: nothing can be
// concluded about it.
func (p Pod) Unknown() bool { return p.Running && !p.Observed && !p.Down && !p.Deleting }

// Gone: the pod cannot serve: not running, down, or being deleted and silent.
func (p Pod) Gone() bool { return !p.Running || p.Down || (p.Deleting && !p.Observed) }

// ServesAsMaster: observed reporting role master.
func (p Pod) ServesAsMaster() bool {
	return p.Observed && p.Info.Role == valkey.RoleMaster && !p.Info.Loading
}

// View is everything a decision needs.
type View struct {
	// Pods, any order.
	Pods []Pod
	// Primary is the recorded primary (status.primary), "" before bootstrap.
	Primary string
	// Port of the servers.
	Port int
	// FenceHost/FencePort is where servers point when they start.
	FenceHost string
	FencePort int
	Now       time.Time
	DownAfter time.Duration
	// Persistence: pods keep their data across restarts.
	Persistence bool
	// Replicas is spec.replicas: a primary whose ordinal is not below it is switched
	// over before the StatefulSet shrinks.
	Replicas int
	// BootstrapGrace is how long a first election waits for every pod of
	// spec.replicas to answer (so that it is deterministic: the lowest ordinal
	// among equals); after it, the pods that answer are enough.
	BootstrapGrace time.Duration
	// NeverServed: no primary has served yet (a recorded primary is a bootstrap
	// choice, not a failed primary).
	NeverServed bool
	// Ghosts holds what addresses that no pod answers for replied to INFO after
	// they were fenced in this pass, by IP.
	Ghosts map[string]valkey.Info
}

// Kind is the kind of an Action.
type Kind int

// Action kinds.
const (
	// None: the topology is as it should be.
	None Kind = iota
	// Wait: nothing is safe to do now; observe again later.
	Wait
	// Hold: acting would lose data; the operator refuses and reports it.
	Hold
	// Unlabel removes the primary label from Pod (sets it to replica).
	Unlabel
	// Label sets Pod's role label to Role.
	Label
	// Record makes Pod the recorded primary (status.primary) before it is promoted.
	Record
	// Promote sends REPLICAOF NO ONE to Pod.
	Promote
	// Replicate sends REPLICAOF TargetIP Port to Pod.
	Replicate
	// Switchover sends FAILOVER TO Target to the primary Pod.
	Switchover
	// DeletePod deletes Pod so that the StatefulSet recreates it at the new revision.
	DeletePod
	// Fence sends REPLICAOF FenceHost FencePort to the server at TargetIP, which
	// is no pod's serving address (see View.fenceGhost); Pod names the pod it most
	// likely belonged to (for TLS), or is empty.
	Fence
)

func (k Kind) String() string {
	return [...]string{"None", "Wait", "Hold", "Unlabel", "Label", "Record", "Promote", "Replicate", "Switchover", "DeletePod", "Fence"}[k]
}

// Action is one step towards the desired topology.
type Action struct {
	Kind     Kind
	Pod      string
	Target   string
	TargetIP string
	Role     string
	// Reason explains the action (status message, event, failover reason).
	Reason string
	// Failover: Record replaces a primary that failed (as opposed to bootstrap,
	// adoption or a planned switchover).
	Failover bool
}

func (a Action) String() string {
	s := a.Kind.String()
	if a.Pod != "" {
		s += " " + a.Pod
	}
	if a.Target != "" {
		s += " -> " + a.Target
	}
	if a.Role != "" {
		s += " role=" + a.Role
	}
	if a.Reason != "" {
		s += " (" + a.Reason + ")"
	}
	return s
}

// Sentinel's rule: a replica disconnected from its primary for longer than ten
// times down-after (plus the time the primary has been down) holds data too old
// to be promoted.
const staleFactor = 10

func sorted(pods []Pod) []Pod {
	out := append([]Pod(nil), pods...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ordinal != out[j].Ordinal {
			return out[i].Ordinal < out[j].Ordinal
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (v View) find(name string) *Pod {
	for i := range v.Pods {
		if v.Pods[i].Name == name {
			return &v.Pods[i]
		}
	}
	return nil
}

func (v View) fenced(p Pod) bool {
	return p.Info.ReplicatingFrom(v.FenceHost, v.FencePort)
}

// Decide returns the next action. Invariants it keeps, whatever the view:
//   - at most one pod carries the primary label, and only a pod that is the
//     recorded primary and reports role master itself;
//   - the label is removed before any other pod is promoted or labelled;
//   - the primary is recorded before it is promoted, so a crash between the two
//     resumes the same decision;
//   - no failover on a partial view: every pod must be observed, down, or gone;
//   - a server without data never becomes the source of a replica that has data.
func Decide(v View) Action {
	v.Pods = sorted(v.Pods)
	primary := v.find(v.Primary)

	// 1. The label: never on a pod that is not the serving recorded primary.
	for _, p := range v.Pods {
		if p.Label != LabelPrimary {
			continue
		}
		switch {
		case p.Name != v.Primary:
			return Action{Kind: Unlabel, Pod: p.Name, Reason: "not the recorded primary"}
		case p.Observed && p.Info.Role != valkey.RoleMaster:
			return Action{Kind: Unlabel, Pod: p.Name, Reason: "reports role " + string(p.Info.Role)}
		case p.Gone():
			return Action{Kind: Unlabel, Pod: p.Name, Reason: "down or gone"}
		}
	}

	// 2. A serving recorded primary.
	if primary != nil && primary.ServesAsMaster() {
		return v.decideServing(*primary)
	}
	if primary != nil && primary.Unknown() {
		return Action{Kind: Wait, Reason: fmt.Sprintf("primary %s does not answer; not down yet (down after %s)", primary.Name, v.DownAfter)}
	}

	// 3. A switchover (FAILOVER) completed before it was recorded: the recorded
	// primary now replicates from the only master.
	if primary != nil && primary.Observed && primary.Info.Role == valkey.RoleSlave {
		if m, ok := v.onlyMaster(); ok && primary.Info.ReplicatingFrom(m.IP, v.Port) && primary.Info.MasterLinkUp {
			return Action{Kind: Record, Pod: m.Name, Reason: fmt.Sprintf("switchover from %s to %s completed", primary.Name, m.Name)}
		}
	}

	// 4. No serving primary: bootstrap or fail over.
	return v.decideFailover(primary)
}

func (v View) onlyMaster() (Pod, bool) {
	var found []Pod
	for _, p := range v.Pods {
		if p.ServesAsMaster() && !v.fenced(p) {
			found = append(found, p)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return Pod{}, false
}

// decideServing handles a recorded primary that reports role master.
func (v View) decideServing(p Pod) Action {
	if p.Info.FailoverState != "" && p.Info.FailoverState != "no-failover" {
		return Action{Kind: Wait, Reason: fmt.Sprintf("switchover in progress on %s (%s)", p.Name, p.Info.FailoverState)}
	}
	// Leaving: hand the role over while the primary still answers.
	if p.Deleting || p.Ordinal >= v.Replicas {
		why := "being deleted"
		if !p.Deleting {
			why = fmt.Sprintf("ordinal %d goes away when scaling to %d", p.Ordinal, v.Replicas)
		}
		if t, ok := v.switchoverTarget(p, func(r Pod) bool { return !r.Deleting && r.Ordinal < v.Replicas }); ok {
			return Action{Kind: Switchover, Pod: p.Name, Target: t.Name, TargetIP: t.IP, Reason: "primary " + why}
		}
		if p.Deleting {
			// No replica can take over: keep serving until it is gone.
			return Action{Kind: Wait, Reason: "primary " + why + " and no replica in sync can take over"}
		}
	}
	if p.Label != LabelPrimary {
		return Action{Kind: Label, Pod: p.Name, Role: LabelPrimary, Reason: "serving primary"}
	}
	// Other servers that claim the primary role are demoted.
	for _, r := range v.Pods {
		if r.Name == p.Name || !r.ServesAsMaster() {
			continue
		}
		if r.Info.Keys > 0 && p.Info.Keys == 0 {
			return Action{Kind: Hold, Pod: r.Name, Reason: fmt.Sprintf("%s reports role master with %d keys while primary %s is empty: refusing to overwrite it", r.Name, r.Info.Keys, p.Name)}
		}
		return Action{Kind: Replicate, Pod: r.Name, Target: p.Name, TargetIP: p.IP, Reason: "second master demoted"}
	}
	// A server no pod answers for must not keep a replica acknowledging its writes.
	if a, ok := v.fenceGhost(); ok {
		return a
	}
	// Replicas follow the primary.
	for _, r := range v.Pods {
		if r.Name == p.Name || !r.Observed || r.Deleting || r.Info.ReplicatingFrom(p.IP, v.Port) {
			continue
		}
		if r.Info.Keys > 0 && p.Info.Keys == 0 {
			return Action{Kind: Hold, Pod: r.Name, Reason: fmt.Sprintf("%s holds %d keys but primary %s is empty: refusing to resynchronize it from the empty primary", r.Name, r.Info.Keys, p.Name)}
		}
		return Action{Kind: Replicate, Pod: r.Name, Target: p.Name, TargetIP: p.IP, Reason: "replicate from the primary"}
	}
	for _, r := range v.Pods {
		if r.Name != p.Name && r.Label != LabelReplica && (r.Observed || r.Gone()) {
			return Action{Kind: Label, Pod: r.Name, Role: LabelReplica}
		}
	}
	return Action{Kind: None}
}

// switchoverTarget picks, in Sentinel's order, a replica of p whose link is up.
func (v View) switchoverTarget(p Pod, ok func(Pod) bool) (Pod, bool) {
	var cs []Candidate
	byName := map[string]Pod{}
	for _, r := range v.Pods {
		if r.Name == p.Name || !r.Observed || r.Down || !r.Info.ReplicatingFrom(p.IP, v.Port) || !r.Info.MasterLinkUp || !ok(r) {
			continue
		}
		cs = append(cs, candidate(r))
		byName[r.Name] = r
	}
	best, found := Select(cs)
	return byName[best.Name], found
}

func candidate(p Pod) Candidate {
	return Candidate{Name: p.Name, Priority: p.Info.ReplicaPriority, Offset: p.Info.Offset(), RunID: p.Info.RunID}
}

// linkDown is how long p has been without a primary link.
func linkDown(p Pod) time.Duration {
	switch {
	case p.Info.Role == valkey.RoleMaster || p.Info.MasterLinkUp:
		return 0
	case p.Info.MasterLinkDownSinceSeconds >= 0:
		return time.Duration(p.Info.MasterLinkDownSinceSeconds) * time.Second
	default: // never connected since it started
		return time.Duration(p.Info.UptimeSeconds) * time.Second
	}
}

// decideFailover handles the absence of a serving primary.
func (v View) decideFailover(old *Pod) Action {
	bootstrap := old == nil && v.Primary == ""
	// A complete view: every pod is observed, down, or gone. Without persistence a
	// pod that does not run holds no data and needs no waiting for.
	var unknown []string
	for _, p := range v.Pods {
		if p.Unknown() || (bootstrap && v.Persistence && !p.Running && !p.Deleting) {
			unknown = append(unknown, p.Name)
		}
	}
	if len(unknown) > 0 {
		return Action{Kind: Wait, Reason: "incomplete view, no failover decision: waiting for " + strings.Join(unknown, ", ")}
	}
	if bootstrap && v.BootstrapGrace > 0 {
		oldest := time.Duration(0)
		answering := map[int]bool{}
		for _, p := range v.Pods {
			oldest = max(oldest, p.Age)
			if p.Observed {
				answering[p.Ordinal] = true
			}
		}
		var missing []string
		for o := 0; o < v.Replicas; o++ {
			if !answering[o] {
				missing = append(missing, strconv.Itoa(o))
			}
		}
		if len(missing) > 0 && oldest < v.BootstrapGrace {
			return Action{Kind: Wait, Reason: fmt.Sprintf("bootstrap waits up to %s for every pod (missing ordinals %s)", v.BootstrapGrace, strings.Join(missing, ", "))}
		}
	}

	// Offsets are final only when no server outside the view still accepts
	// writes that replicas acknowledge.
	if !bootstrap {
		if a, ok := v.fenceGhost(); ok {
			return a
		}
	}

	why := v.failoverReason(old)
	maxDown := staleFactor * v.DownAfter
	if old != nil && !old.DownSince.IsZero() {
		maxDown += v.Now.Sub(old.DownSince)
	}
	var cs []Candidate
	byName := map[string]Pod{}
	var excluded []string
	dataElsewhere := int64(0)
	for _, p := range v.Pods {
		if !p.Observed || p.Deleting || p.Info.Loading || p.Down {
			continue
		}
		// Sentinel's staleness rule applies to replicas that lost their primary; a
		// fenced pod (restarted) never had a link, its offset says what it holds.
		if !bootstrap && !v.fenced(p) && linkDown(p) > maxDown {
			excluded = append(excluded, fmt.Sprintf("%s (disconnected %s)", p.Name, linkDown(p)))
			dataElsewhere = max(dataElsewhere, p.Info.Keys)
			continue
		}
		if p.Info.ReplicaPriority <= 0 {
			excluded = append(excluded, p.Name+" (replica-priority 0)")
			dataElsewhere = max(dataElsewhere, p.Info.Keys)
			continue
		}
		c := candidate(p)
		if bootstrap {
			// Nothing to prefer but data: highest offset, then lowest ordinal.
			c = Candidate{Name: p.Name, Priority: 1, Offset: p.Info.Offset(), RunID: fmt.Sprintf("%08d", p.Ordinal)}
		}
		cs = append(cs, c)
		byName[p.Name] = p
	}
	best, ok := Select(cs)
	if !ok && !bootstrap {
		// Nothing to promote, and a pod at an old revision whose server does not
		// run (a template that cannot be scheduled or started, rolled back since):
		// it will not run until the StatefulSet re-creates it from the current
		// template. Replacing it loses nothing (its claim is kept); waiting for it
		// lasts for ever (a one-pod cluster whose primary went Pending).
		for _, p := range v.Pods {
			if !p.UpToDate && !p.Deleting && !p.Observed && (!p.Running || p.Stalled) {
				return Action{Kind: DeletePod, Pod: p.Name, Reason: why + "; no pod can be promoted and " + p.Name + " at an old revision does not run (pending or crashed): replaced from the current template"}
			}
		}
	}
	if !ok {
		msg := "no pod can be promoted"
		if len(excluded) > 0 {
			msg += ": excluded " + strings.Join(excluded, ", ")
		}
		if bootstrap {
			return Action{Kind: Wait, Reason: "bootstrap: no pod answers yet"}
		}
		return Action{Kind: Wait, Reason: why + "; " + msg}
	}
	// The recorded primary keeps the role when no candidate holds more: a restarted
	// primary that reloaded its data, or a decision already recorded.
	if rec, ok := byName[v.Primary]; ok && !bootstrap && rec.Info.Offset() >= best.Offset {
		best = candidate(rec)
	}
	chosen := byName[best.Name]
	if chosen.Info.Keys == 0 && dataElsewhere > 0 {
		return Action{Kind: Hold, Pod: chosen.Name, Reason: fmt.Sprintf("the only pods with data cannot be promoted (%s) and %s is empty: promote one by hand (set its replica-priority) or accept the loss by deleting it", strings.Join(excluded, ", "), chosen.Name)}
	}
	if chosen.Name != v.Primary {
		reason := why
		if bootstrap {
			reason = "bootstrap"
		}
		return Action{Kind: Record, Pod: chosen.Name, Reason: reason, Failover: !bootstrap}
	}
	return Action{Kind: Promote, Pod: chosen.Name, Reason: why}
}

// fenceGhost fences a ghost: a server that a replica keeps a live link to but
// that no pod answers for. It is the process of a pod deleted with grace 0 (or
// of a node the API has given up on) that still runs: the StatefulSet has
// already replaced the pod, clients still connected to the old address write to
// it, and its replicas acknowledge those writes. Promoting another server while
// it runs loses them; re-pointing its replicas does too. REPLICAOF makes it
// refuse writes; its replicas stay linked to a server that receives nothing, so
// their offsets are final afterwards.
//
// A pod that is down is not a ghost: a frozen server accepts nothing, and the
// health checks judge one the operator cannot reach.
func (v View) fenceGhost() (Action, bool) {
	for _, r := range v.Pods {
		if !r.Observed || r.Info.Role != valkey.RoleSlave || !r.Info.MasterLinkUp || r.Info.MasterPort != v.Port || v.fenced(r) {
			continue
		}
		host := r.Info.MasterHost
		if g, ok := v.Ghosts[host]; ok && g.Role != valkey.RoleMaster {
			continue // fenced
		}
		owner := ""
		if q := v.atIP(host); q != nil {
			if q.Observed || q.Down {
				continue // answers for itself (serving, or a replica that takes no writes), or frozen
			}
			owner = q.Name
		} else if old := v.find(v.Primary); old != nil && !old.ServesAsMaster() {
			owner = old.Name // most likely the failed primary's previous incarnation
		}
		return Action{Kind: Fence, Pod: owner, TargetIP: host,
			Reason: fmt.Sprintf("%s replicates from %s:%d, which no pod serves (a deleted pod's process still running): fencing it before its writes are acknowledged", r.Name, host, v.Port)}, true
	}
	return Action{}, false
}

// atIP returns the pod whose IP is host.
func (v View) atIP(host string) *Pod {
	for i := range v.Pods {
		if v.Pods[i].IP == host {
			return &v.Pods[i]
		}
	}
	return nil
}

func (v View) failoverReason(old *Pod) string {
	switch {
	case v.Primary == "" || v.NeverServed:
		return "bootstrap"
	case old == nil:
		return fmt.Sprintf("primary %s does not exist", v.Primary)
	case old.Deleting:
		return fmt.Sprintf("primary %s is being deleted", old.Name)
	case old.Down:
		return fmt.Sprintf("primary %s is down (no reply for %s)", old.Name, v.DownAfter)
	case !old.Running:
		return fmt.Sprintf("primary %s is not running", old.Name)
	case old.Observed && v.fenced(*old):
		return fmt.Sprintf("primary %s restarted", old.Name)
	case old.Observed && old.Info.Role == valkey.RoleSlave:
		return fmt.Sprintf("primary %s reports role slave of %s:%d", old.Name, old.Info.MasterHost, old.Info.MasterPort)
	case old.Observed && old.Info.Loading:
		return fmt.Sprintf("primary %s is loading its dataset", old.Name)
	}
	return fmt.Sprintf("primary %s is not serving", old.Name)
}
