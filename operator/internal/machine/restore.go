package machine

import (
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

// restore loads spec.restoreFrom into a new cluster before it bootstraps: a
// restore pod checks the backup's checksum and serves it, the first pod
// replicates from it, and once it holds every key the Restored condition is
// recorded; the ordinary bootstrap then elects that pod (it has the data) and the
// restore pod is deleted. It reports whether the topology must wait.
func (p *pass) restore() bool {
	c := p.c
	rf := c.Spec.RestoreFrom
	if rf == nil {
		return false
	}
	podKey := &corev1.Pod{ObjectMeta: nn(c, resources.RestorePodName(c))}
	if cond := meta.FindStatusCondition(p.w.status.Conditions, v1alpha1.ConditionRestored); (cond != nil && cond.Status == metav1.ConditionTrue) || p.w.status.Primary != "" {
		if cond == nil || cond.Status != metav1.ConditionTrue {
			p.setRestored(true, "NotNeeded", "the cluster already had a primary; nothing was restored")
		}
		p.ensure("restore-pod", podKey, false, nil, nil)
		return false
	}
	fail := func(reason, msg string, after time.Duration) bool {
		p.w.restoring = msg
		p.setRestored(false, reason, msg)
		p.w.wantRequeue(after)
		return true
	}

	obj, found, err := p.get("get:backup", &v1alpha1.ValkeyBackup{ObjectMeta: nn(c, rf.BackupName)})
	if err != nil {
		p.apiErr("read the ValkeyBackup", err)
	}
	if !found {
		return fail("BackupNotFound", fmt.Sprintf("ValkeyBackup %q (spec.restoreFrom) does not exist", rf.BackupName), 10*time.Second)
	}
	b := obj.(*v1alpha1.ValkeyBackup)
	switch b.Status.Phase {
	case v1alpha1.BackupCompleted:
	case v1alpha1.BackupFailed:
		return fail("BackupFailed", fmt.Sprintf("ValkeyBackup %q failed: %s", b.Name, b.Status.Message), time.Minute)
	default:
		return fail("BackupNotReady", fmt.Sprintf("waiting for ValkeyBackup %q to complete (phase %q)", b.Name, b.Status.Phase), 5*time.Second)
	}

	podObj := p.ensure("restore-pod", podKey, true,
		func() client.Object { return resources.MakeRestorePod(c, b) },
		func(o client.Object) (client.Object, bool) { return o, false })
	rp := podObj.(*corev1.Pod)
	if rp.Status.Phase == corev1.PodFailed || rp.Status.Phase == corev1.PodSucceeded {
		msg := "the restore server exited"
		for _, cs := range rp.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.Message != "" {
				msg += ": " + t.Message
			}
		}
		// Delete it so the next pass tries again (a checksum mismatch fails again).
		p.ensure("restore-pod-failed", podKey, false, nil, nil)
		return fail("RestoreFailed", msg, 30*time.Second)
	}
	src := &podRef{name: rp.Name, pod: rp, ip: rp.Status.PodIP, running: containerRunning(rp)}
	if !src.running {
		return fail("Restoring", "starting the restore server "+rp.Name, time.Second)
	}
	p.info("restore:info-source", src)
	if !src.observed || src.info.Loading {
		return fail("Restoring", "the restore server is loading the backup", time.Second)
	}
	target := p.firstPod()
	if target == nil || !target.observed {
		return fail("Restoring", "waiting for the first Valkey pod", time.Second)
	}
	if !target.info.ReplicatingFrom(src.ip, conf.Port) {
		if _, err := p.valkeyCmd("restore:replicate", *target, "load the backup", valkey.CmdReplicaOf(src.ip, conf.Port)...); err != nil {
			p.valkeyFailed("point "+target.name+" at the restore server", err)
		}
		p.emit("restore:start", corev1.EventTypeNormal, "RestoreStarted", fmt.Sprintf("%s loads ValkeyBackup %q from %s", target.name, b.Name, net.JoinHostPort(src.ip, strconv.Itoa(conf.Port))))
		p.info("restore:info-target", target)
	}
	if !target.info.MasterLinkUp || target.info.MasterSyncInProgress || target.info.Keys != src.info.Keys {
		return fail("Restoring", fmt.Sprintf("%s is loading the backup (%d of %d keys)", target.name, target.info.Keys, src.info.Keys), 500*time.Millisecond)
	}
	msg := fmt.Sprintf("%d keys loaded from ValkeyBackup %q (%s) into %s", src.info.Keys, b.Name, b.Status.Checksum, target.name)
	p.setRestored(true, "Restored", msg)
	st := p.w.status.DeepCopy()
	meta.SetStatusCondition(&st.Conditions, *p.w.restored)
	p.writeStatus("restore:status", *st, "restore complete")
	p.emit("restore:done", corev1.EventTypeNormal, "Restored", msg)
	return false
}

func (p *pass) setRestored(ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	p.w.restored = &metav1.Condition{Type: v1alpha1.ConditionRestored, Status: s, Reason: reason, Message: msg,
		ObservedGeneration: p.c.Generation, LastTransitionTime: metav1.NewTime(p.in.Now)}
}

// firstPod is the pod with the lowest ordinal.
func (p *pass) firstPod() *podRef {
	if len(p.w.pods) == 0 {
		return nil
	}
	return p.w.pods[0]
}

// removePassword switches auth off (spec.auth.passwordSecret removed): every
// pod accepts clients without a password (ACL SETUSER default nopass) and stops
// sending one to the primary, and only then is the auth Secret deleted (the
// servers restarted by the roll no longer include it). Idempotent like the rotation.
func (p *pass) removePassword() {
	if !p.everyPodObserved() {
		return // every pod must take part
	}
	for _, r := range p.w.pods {
		if !r.observed {
			continue
		}
		if _, err := p.valkeyCmd("unauth:nopass:"+r.name, *r, "accept clients without a password", "ACL", "SETUSER", "default", "nopass"); err != nil {
			p.valkeyFailed("remove the password on "+r.name, err)
		}
		if _, err := p.valkeyCmd("unauth:masterauth:"+r.name, *r, "stop authenticating towards the primary", valkey.CmdConfigSet(map[string]string{"masterauth": ""})...); err != nil {
			p.valkeyFailed("clear masterauth on "+r.name, err)
		}
	}
	obj, found, err := p.get("unauth:get-secret", &corev1.Secret{ObjectMeta: nn(p.c, resources.AuthSecretName(p.c))})
	if err != nil {
		p.apiErr("read the auth Secret", err)
	}
	if found {
		if _, err := p.write("unauth:delete-secret", Delete, obj, "auth is off"); err != nil && !isNotFound(err) {
			p.apiErr("delete the auth Secret", err)
		}
	}
	p.emit("unauth:done", corev1.EventTypeNormal, "PasswordRemoved", "auth is off: every pod accepts clients without a password")
	p.w.current = ""
}

// everyPodObserved: every running pod answered INFO in this pass (else the next
// pass is asked for soon).
func (p *pass) everyPodObserved() bool {
	for _, r := range p.w.pods {
		if r.running && !r.observed && r.pod.DeletionTimestamp == nil {
			p.w.wantRequeue(time.Second)
			return false
		}
	}
	return true
}

// rotatePassword moves the servers from the password they were set up with (""
// when auth is switched on) to the one of spec.auth.passwordSecret without a
// restart and without refusing anyone: the new password is added (ACL SETUSER
// default >new, which also ends nopass) and used towards the primary (CONFIG SET
// masterauth) on every pod, then the old one is removed, and only then the auth
// Secret (what restarting servers read) is rewritten.
// Every step is idempotent, so a crash at any point converges.
func (p *pass) rotatePassword() {
	if p.w.current == p.w.password {
		return
	}
	if p.w.password == "" {
		p.removePassword()
		return
	}
	if !p.everyPodObserved() {
		return // every pod must take part
	}
	for _, r := range p.w.pods {
		if !r.observed {
			continue
		}
		if _, err := p.valkeyCmd("rotate:add:"+r.name, *r, "add the new password", "ACL", "SETUSER", "default", ">"+p.w.password); err != nil {
			p.valkeyFailed("add the new password on "+r.name, err)
		}
		if _, err := p.valkeyCmd("rotate:masterauth:"+r.name, *r, "use the new password towards the primary", valkey.CmdConfigSet(map[string]string{"masterauth": p.w.password})...); err != nil {
			p.valkeyFailed("set masterauth on "+r.name, err)
		}
	}
	for _, r := range p.w.pods {
		if !r.observed || p.w.current == "" { // from no password: adding one ended nopass
			continue
		}
		_, err := p.valkeyCmd("rotate:remove:"+r.name, *r, "remove the old password", "ACL", "SETUSER", "default", "<"+p.w.current)
		if _, isReply := valkey.IsServerError(err); err != nil && !isReply {
			p.valkeyFailed("remove the old password on "+r.name, err)
		}
	}
	obj, found, err := p.get("rotate:get-secret", &corev1.Secret{ObjectMeta: nn(p.c, resources.AuthSecretName(p.c))})
	if err != nil || !found {
		p.apiErr("read the auth Secret", fmt.Errorf("%v (found %v)", err, found))
	}
	next, _ := resources.UpdateAuthSecret(p.desired(), obj.(*corev1.Secret))
	if _, err := p.write("rotate:secret", Update, next, "record the new password"); err != nil {
		p.apiErr("write the auth Secret", err)
	}
	p.emit("rotate:done", corev1.EventTypeNormal, "PasswordRotated", "every pod now accepts only the password of spec.auth.passwordSecret")
	p.w.current = p.w.password
}
