package machine

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// maxTopologyActions bounds the topology actions of one pass.
const maxTopologyActions = 64

// topology executes failover.Decide's actions one at a time, observing again
// after each, until the topology is as it should be or nothing is safe to do.
func (p *pass) topology() {
	for i := 0; ; i++ {
		if i >= maxTopologyActions {
			p.w.wantRequeue(time.Second)
			return
		}
		a := failover.Decide(p.view())
		p.w.topo = a
		key := fmt.Sprintf("topo:%d", i)
		switch a.Kind {
		case failover.None:
			p.w.serving = true
			return
		case failover.Wait:
			p.w.wantRequeue(p.waitDelay())
			return
		case failover.Hold:
			p.emit("hold:"+a.Pod+":"+a.Reason, corev1.EventTypeWarning, "FailoverHeld", a.Reason)
			p.w.wantRequeue(10 * time.Second)
			return
		case failover.Unlabel:
			p.setRole(key, a.Pod, v1alpha1.RoleReplica, a.Reason)
		case failover.Label:
			p.setRole(key, a.Pod, a.Role, a.Reason)
		case failover.Record:
			p.record(key, a)
		case failover.Promote:
			r := p.findPod(a.Pod)
			if _, err := p.valkeyCmd(key, *r, "promote: "+a.Reason, valkey.CmdPromote()...); err != nil {
				p.valkeyFailed("promote "+a.Pod, err)
			}
			p.emit(key+":promoted:"+a.Pod, corev1.EventTypeNormal, "Promoted", fmt.Sprintf("%s promoted to primary (REPLICAOF NO ONE): %s", a.Pod, a.Reason))
			p.info(key+":info", r)
		case failover.Replicate:
			r := p.findPod(a.Pod)
			if _, err := p.valkeyCmd(key, *r, "replicate: "+a.Reason, valkey.CmdReplicaOf(a.TargetIP, conf.Port)...); err != nil {
				p.valkeyFailed("point "+a.Pod+" at "+a.Target, err)
			}
			p.info(key+":info", r)
		case failover.Switchover:
			p.switchover(key, a)
		case failover.Fence:
			p.fence(key, a)
		default:
			p.end(0, fmt.Errorf("topology: unexpected action %v", a), "")
		}
	}
}

func (p *pass) waitDelay() time.Duration {
	return max(p.c.Spec.Failover.HealthCheckInterval.Duration, 500*time.Millisecond)
}

// valkeyFailed ends the pass after a failed command: the next pass observes again.
func (p *pass) valkeyFailed(what string, err error) {
	p.w.wantRequeue(p.waitDelay())
	p.finishStatus()
	p.end(p.w.requeue, nil, fmt.Sprintf("%s: %v", what, err))
}

// setRole writes a pod's role label.
func (p *pass) setRole(key, pod, role, why string) {
	r := p.findPod(pod)
	next := r.pod.DeepCopy()
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	next.Labels[v1alpha1.LabelRole] = role
	obj, err := p.write(key, Update, next, fmt.Sprintf("label %s role=%s: %s", pod, role, why))
	if err != nil {
		if isNotFound(err) {
			p.end(200*time.Millisecond, nil, "pod "+pod+" disappeared")
		}
		p.apiErr("label pod "+pod, err)
	}
	r.pod = obj.(*corev1.Pod)
}

// record makes a pod the recorded primary before it is promoted: a crash between
// the two resumes the same decision.
func (p *pass) record(key string, a failover.Action) {
	st := p.w.status.DeepCopy()
	prev := st.Primary
	st.Primary = a.Pod
	if a.Failover || prev != "" {
		now := metav1.NewTime(p.in.Now)
		st.LastFailoverTime = &now
		st.LastFailoverReason = a.Reason
	}
	if prev != "" {
		st.Phase = v1alpha1.PhaseFailingOver
	}
	p.writeStatus(key, *st, "record primary "+a.Pod+": "+a.Reason)
	switch {
	case prev == "":
		p.emit(key+":bootstrap", corev1.EventTypeNormal, "PrimaryElected", fmt.Sprintf("%s elected primary (%s)", a.Pod, a.Reason))
	case a.Failover:
		p.emit(key+":failover", corev1.EventTypeWarning, "Failover", fmt.Sprintf("failover from %s to %s: %s", prev, a.Pod, a.Reason))
	default:
		p.emit(key+":switchover", corev1.EventTypeNormal, "Switchover", fmt.Sprintf("primary is now %s (was %s): %s", a.Pod, prev, a.Reason))
	}
}

// fence turns a server that no pod answers for into a replica of the fence
// address, so that it refuses writes (its replicas stay linked, as chained
// replicas of a server that receives nothing), and records its INFO so that the
// next decision knows it is fenced.
func (p *pass) fence(key string, a failover.Action) {
	ghost := podRef{name: a.Pod, ip: a.TargetIP}
	if ghost.name == "" {
		ghost.name = p.c.Name + "-0" // for TLS only; the IP SAN is checked first
	}
	if _, err := p.valkeyCmd(key, ghost, "fence: "+a.Reason, valkey.CmdReplicaOf(conf.FenceHost, conf.FencePort)...); err != nil {
		p.valkeyFailed("fence "+a.TargetIP, err)
	}
	p.emit(key+":fenced:"+a.TargetIP, corev1.EventTypeWarning, "Fenced", fmt.Sprintf("fenced %s (REPLICAOF %s %d): %s", a.TargetIP, conf.FenceHost, conf.FencePort, a.Reason))
	p.info(key+":info", &ghost)
	if !ghost.observed {
		p.valkeyFailed("observe fenced "+a.TargetIP, ghost.infoErr)
	}
	if p.w.ghosts == nil {
		p.w.ghosts = map[string]valkey.Info{}
	}
	p.w.ghosts[a.TargetIP] = ghost.info
}

// switchover asks the primary to hand over to the target (FAILOVER TO); the next
// pass records the new primary once the target reports role master.
func (p *pass) switchover(key string, a failover.Action) {
	r := p.findPod(a.Pod)
	timeout := max(2*p.c.Spec.Failover.DownAfter.Duration, 5*time.Second)
	if _, err := p.valkeyCmd(key, *r, "switchover: "+a.Reason, valkey.CmdFailover(a.TargetIP, conf.Port, timeout)...); err != nil {
		p.valkeyFailed("switch over from "+a.Pod+" to "+a.Target, err)
	}
	p.emit(key+":switchover-start", corev1.EventTypeNormal, "SwitchoverStarted", fmt.Sprintf("FAILOVER from %s to %s: %s", a.Pod, a.Target, a.Reason))
	p.w.wantRequeue(200 * time.Millisecond)
	p.finishStatus()
	p.end(p.w.requeue, nil, "switchover in progress")
}

// stsSettled: the StatefulSet controller has observed the StatefulSet's latest
// spec, so its update revision (which pods are outdated) is current.
func (p *pass) stsSettled() bool {
	sts := p.w.sts
	return sts == nil || sts.Status.ObservedGeneration >= sts.Generation
}

// writeStatus stores a status now (not at the end of the pass).
func (p *pass) writeStatus(key string, st v1alpha1.ValkeyClusterStatus, why string) {
	obj := p.w.cr.DeepCopy()
	obj.Status = st
	res, err := p.write(key, UpdateStatus, obj, why)
	if err != nil {
		p.apiErr("write the status", err)
	}
	p.w.cr = res.(*v1alpha1.ValkeyCluster)
	p.w.status = *p.w.cr.Status.DeepCopy()
}

// roll restarts outdated pods one at a time (failover.PlanRoll).
func (p *pass) roll() {
	if p.w.cfgRestart || !p.stsSettled() {
		p.w.roll = failover.Action{Kind: failover.Wait, Reason: "waiting for the StatefulSet controller to observe the new template"}
		p.w.wantRequeue(500 * time.Millisecond)
		return
	}
	a := failover.PlanRoll(p.view())
	p.w.roll = a
	switch a.Kind {
	case failover.None:
		return
	case failover.Wait:
		p.w.wantRequeue(2 * time.Second)
	case failover.DeletePod:
		r := p.findPod(a.Pod)
		victim := r.pod.DeepCopy()
		if _, err := p.write("roll:delete:"+a.Pod, Delete, victim, a.Reason); err != nil && !isNotFound(err) {
			p.apiErr("delete pod "+a.Pod+" for the rolling restart", err)
		}
		p.emit("roll:"+a.Pod, corev1.EventTypeNormal, "RollingRestart", fmt.Sprintf("restarting %s: %s", a.Pod, a.Reason))
		p.w.wantRequeue(time.Second)
	case failover.Switchover:
		p.switchover("roll:switchover", a)
	}
}
