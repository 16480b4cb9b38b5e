package machine

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
)

// Resync is the requeue delay of a converged cluster (the health checks trigger
// earlier passes when something changes).
const Resync = time.Minute

// reconcileCluster is one pass, in order: prerequisites (Secrets), the
// ConfigMap, Services, PodDisruptionBudget and StatefulSet; the pods and what
// their servers report; a restore from a backup; the topology (bootstrap,
// failover, labels, replication); the configuration; the rolling restart; the
// status.
func (p *pass) reconcileCluster() Request {
	raw := p.in.Cluster
	if raw == nil || raw.DeletionTimestamp != nil {
		// Deletion: every object has an owner reference; the garbage collector
		// removes them (and the StatefulSet's claim policy decides the claims).
		return done(0, nil)
	}
	p.c = raw.Defaulted()
	p.w.cr = raw.DeepCopy()
	p.w.status = *raw.Status.DeepCopy()

	p.secrets()
	p.configMap()
	p.services()
	p.pdb()
	p.statefulSet()
	p.listPods()
	p.observe()
	if !p.restore() {
		p.topology()
		if p.w.serving {
			p.rotatePassword()
			p.config()
			p.roll()
		}
	}
	p.finishStatus()
	if p.w.requeue == 0 {
		p.w.requeue = Resync
	}
	r := done(p.w.requeue, nil)
	r.Why = p.summary()
	return r
}

func (p *pass) summary() string {
	var parts []string
	if p.w.topo.Kind != failover.None {
		parts = append(parts, "topology: "+p.w.topo.String())
	}
	if p.w.roll.Kind != failover.None {
		parts = append(parts, "roll: "+p.w.roll.String())
	}
	if p.w.restoring != "" {
		parts = append(parts, "restore: "+p.w.restoring)
	}
	if len(parts) == 0 {
		return "converged"
	}
	return strings.Join(parts, "; ")
}

// finishStatus computes the status from what the pass learned and writes it if
// it changed.
func (p *pass) finishStatus() {
	if p.c == nil || p.w.cr == nil {
		return
	}
	st := p.w.status.DeepCopy()
	c := p.c
	st.Selector = labels.SelectorFromSet(resources.SelectorLabels(c)).String()
	st.Replicas = int32(len(p.w.pods))
	var primary *podRef
	if p.w.serving {
		primary = p.findPod(st.Primary)
	}
	ready := int32(0)
	for _, r := range p.w.pods {
		switch {
		case primary != nil && r.name == primary.name:
			ready++
		case primary != nil && r.observed && r.info.ReplicatingFrom(primary.ip, conf.Port) && r.info.MasterLinkUp:
			ready++
		}
	}
	st.ReadyReplicas = ready

	gen := c.Generation
	cond := func(t string, ok bool, reason, msg string) {
		s := metav1.ConditionFalse
		if ok {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: trim(msg),
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(p.in.Now)})
	}

	// PrimaryAvailable.
	switch {
	case p.w.serving:
		cond(v1alpha1.ConditionPrimaryAvailable, true, "PrimaryServing", st.Primary+" is labelled primary and reports role master")
	case p.w.blocked != nil:
		cond(v1alpha1.ConditionPrimaryAvailable, false, p.w.blocked.Reason, p.w.blocked.Message)
	case p.w.restoring != "":
		cond(v1alpha1.ConditionPrimaryAvailable, false, "Restoring", p.w.restoring)
	case p.w.topo.Kind == failover.Hold:
		cond(v1alpha1.ConditionPrimaryAvailable, false, "FailoverHeld", p.w.topo.Reason)
	case st.Primary == "":
		cond(v1alpha1.ConditionPrimaryAvailable, false, "Bootstrapping", orDefault(p.w.topo.Reason, "waiting for pods"))
	default:
		cond(v1alpha1.ConditionPrimaryAvailable, false, "FailingOver", orDefault(p.w.topo.Reason, "no primary serves"))
	}

	// ConfigApplied.
	outdated := p.outdatedPods()
	switch {
	case p.w.blocked != nil || !p.w.serving:
		// Unknown until a primary serves: keep what was there.
	case len(p.w.cfgReject) > 0:
		var msgs []string
		for _, k := range slices.Sorted(maps.Keys(p.w.cfgReject)) {
			msgs = append(msgs, fmt.Sprintf("%s: %s", k, p.w.cfgReject[k]))
		}
		cond(v1alpha1.ConditionConfigApplied, false, "ConfigRejected", "not applied, not written: "+strings.Join(msgs, "; "))
	case len(p.w.cfgPending) > 0:
		cond(v1alpha1.ConditionConfigApplied, false, "Pending", "applying "+strings.Join(p.w.cfgPending, ", "))
	case p.w.cfgRestart || !p.stsSettled():
		cond(v1alpha1.ConditionConfigApplied, false, "RestartPending", "restart-only keys recorded; the pods will be restarted")
	case len(outdated) > 0:
		cond(v1alpha1.ConditionConfigApplied, false, "RestartPending", "rolling restart of "+strings.Join(outdated, ", "))
	default:
		cond(v1alpha1.ConditionConfigApplied, true, "Applied", "spec.config is in effect on every pod")
	}

	// Restored.
	if p.w.restored != nil {
		meta.SetStatusCondition(&st.Conditions, *p.w.restored)
	}

	// Phase and Ready.
	var phase v1alpha1.ClusterPhase
	readyMsg := ""
	switch {
	case p.w.blocked != nil:
		phase, readyMsg = v1alpha1.PhasePending, p.w.blocked.Message
		if st.Primary != "" {
			phase = v1alpha1.PhaseDegraded
		}
	case p.w.restoring != "":
		phase, readyMsg = v1alpha1.PhaseRestoring, p.w.restoring
	case !p.w.serving && st.Primary == "":
		phase, readyMsg = v1alpha1.PhasePending, orDefault(p.w.topo.Reason, "waiting for pods")
	case !p.w.serving && p.w.topo.Kind == failover.Hold:
		phase, readyMsg = v1alpha1.PhaseUnavailable, p.w.topo.Reason
	case !p.w.serving:
		phase, readyMsg = v1alpha1.PhaseFailingOver, orDefault(p.w.topo.Reason, "no primary serves")
	case len(p.w.pods) != int(c.Spec.Replicas) || len(outdated) > 0 || len(p.w.cfgPending) > 0 || p.w.cfgRestart || !p.stsSettled():
		phase, readyMsg = v1alpha1.PhaseUpdating, fmt.Sprintf("%d/%d pods ready", ready, c.Spec.Replicas)
		if len(outdated) > 0 {
			readyMsg += "; restarting " + strings.Join(outdated, ", ")
		}
	case ready < c.Spec.Replicas:
		phase, readyMsg = v1alpha1.PhaseDegraded, fmt.Sprintf("%d/%d pods ready", ready, c.Spec.Replicas)
	default:
		phase, readyMsg = v1alpha1.PhaseReady, fmt.Sprintf("%d/%d pods ready", ready, c.Spec.Replicas)
	}
	st.Phase = phase
	if p.w.blocked != nil {
		cond(v1alpha1.ConditionReady, false, p.w.blocked.Reason, p.w.blocked.Message)
	} else {
		cond(v1alpha1.ConditionReady, phase == v1alpha1.PhaseReady, string(phase), readyMsg)
	}
	if phase == v1alpha1.PhaseReady || phase == v1alpha1.PhaseDegraded || phase == v1alpha1.PhaseUpdating {
		st.ObservedGeneration = gen
	}
	if phase != v1alpha1.PhaseReady {
		p.w.wantRequeue(2 * time.Second)
	}

	if equality.Semantic.DeepEqual(*st, p.w.cr.Status) {
		return
	}
	p.writeStatus("status", *st, "status: "+string(phase))
}

func (p *pass) outdatedPods() []string {
	if p.w.sts == nil || p.w.sts.Status.UpdateRevision == "" {
		return nil
	}
	var out []string
	for _, r := range p.w.pods {
		if r.pod.Labels["controller-revision-hash"] != p.w.sts.Status.UpdateRevision {
			out = append(out, r.name)
		}
	}
	sort.Strings(out)
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// trim keeps condition messages within the API's limit.
func trim(s string) string {
	const maxLen = 32000
	if len(s) > maxLen {
		return s[:maxLen]
	}
	return s
}
