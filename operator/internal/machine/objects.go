package machine

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gauntlet-dev/gauntlet/operator/api/v1alpha1"
	"github.com/gauntlet-dev/gauntlet/operator/internal/conf"
	"github.com/gauntlet-dev/gauntlet/operator/internal/failover"
	"github.com/gauntlet-dev/gauntlet/operator/internal/resources"
	"github.com/gauntlet-dev/gauntlet/operator/internal/valkey"
)

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
func isConflict(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
}

// world is what a replay of the pass has learned so far.
type world struct {
	cr       *v1alpha1.ValkeyCluster // latest stored object (for status writes)
	status   v1alpha1.ValkeyClusterStatus
	password string // desired password (the user's Secret)
	current  string // password the servers were set up with (the auth Secret)
	tls      *valkey.TLS
	applied  conf.Applied
	cm       *corev1.ConfigMap
	sts      *appsv1.StatefulSet
	pods     []*podRef
	// ghosts holds INFO of fenced addresses no pod answers for, by IP.
	ghosts map[string]valkey.Info

	// Outcome of the stages, for the status.
	blocked    *metav1.Condition // a prerequisite is missing (Ready=False with this reason)
	topo       failover.Action   // last topology decision
	serving    bool              // a recorded primary serves and is labelled
	roll       failover.Action   // last rolling-restart decision
	cfgPending []string          // keys not yet in effect
	cfgReject  map[string]string // key → why it was refused
	cfgRestart bool              // restart-only keys wait for the roll
	restoring  string            // restore in progress: why ("" when none)
	restored   *metav1.Condition
	requeue    time.Duration
}

func (w *world) wantRequeue(d time.Duration) {
	if d > 0 && (w.requeue == 0 || d < w.requeue) {
		w.requeue = d
	}
}

// podRef is one Valkey pod as the pass knows it.
type podRef struct {
	name     string
	ordinal  int
	pod      *corev1.Pod
	ip       string
	running  bool
	observed bool
	info     valkey.Info
	infoErr  error
}

func (p *pass) opTimeout() time.Duration {
	return max(2*p.c.Spec.Failover.Timeout.Duration, time.Second)
}

// BootstrapGrace is how long the first election of a cluster waits for all its
// pods (see failover.View.BootstrapGrace).
const BootstrapGrace = 30 * time.Second

// everServed: the status has seen a serving primary (PrimaryAvailable was True
// at some point: its reason is not a bootstrap one).
func everServed(st v1alpha1.ValkeyClusterStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionPrimaryAvailable {
			return c.Reason != "Bootstrapping" && c.Reason != "Restoring"
		}
	}
	return false
}

func (p *pass) endpoint(pod podRef) valkey.Endpoint {
	ep := valkey.Endpoint{Addr: net.JoinHostPort(pod.ip, strconv.Itoa(conf.Port)), Password: p.w.password, AltPassword: p.w.current}
	if p.w.current == p.w.password {
		ep.AltPassword = ""
	}
	if p.w.tls != nil {
		t := *p.w.tls
		t.ServerName = fmt.Sprintf("%s.%s.%s.svc", pod.name, resources.HeadlessServiceName(p.c), p.c.Namespace)
		ep.TLS = &t
	}
	return ep
}

func (p *pass) desired() resources.Desired {
	return resources.Desired{Cluster: p.c, Applied: p.w.applied, Password: p.w.password, Replicas: p.stsReplicas()}
}

// stsReplicas is spec.replicas, except that a primary whose ordinal would go away
// keeps its pod until it has been switched over.
func (p *pass) stsReplicas() int32 {
	n := p.c.Spec.Replicas
	if ord, ok := ordinalOf(p.c, p.w.status.Primary); ok && int32(ord) >= n {
		return int32(ord) + 1
	}
	return n
}

func ordinalOf(c *v1alpha1.ValkeyCluster, pod string) (int, bool) {
	prefix := resources.StatefulSetName(c) + "-"
	s, ok := strings.CutPrefix(pod, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

func (p *pass) block(reason, msg string, after time.Duration) {
	p.w.blocked = &metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	p.w.wantRequeue(after)
	p.finishStatus()
	p.end(p.w.requeue, nil, msg)
}

func nn(c *v1alpha1.ValkeyCluster, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: c.Namespace}
}

// secrets reads the user's password and TLS Secrets and keeps the auth Secret.
func (p *pass) secrets() {
	c := p.c
	if ref := c.Spec.Auth.PasswordSecret; ref != nil {
		obj, found, err := p.get("get:password-secret", &corev1.Secret{ObjectMeta: nn(c, ref.Name)})
		if err != nil {
			p.apiErr("read the password Secret", err)
		}
		if !found {
			p.block("PasswordSecretMissing", fmt.Sprintf("Secret %q (spec.auth.passwordSecret) does not exist: create it", ref.Name), 15*time.Second)
		}
		pw, ok := obj.(*corev1.Secret).Data[ref.Key]
		if !ok || len(pw) == 0 {
			p.block("PasswordSecretMissing", fmt.Sprintf("Secret %q has no key %q (spec.auth.passwordSecret)", ref.Name, ref.Key), 15*time.Second)
		}
		p.w.password = string(pw)
		// The auth Secret records the password the servers are set up with; the
		// password rotation rewrites it, not this. Auth switched on for servers that
		// already run without one is recorded as "" (no password), so the rotation
		// sets it live on every server before any restarted pod requires it.
		cur := p.ensure("auth-secret", &corev1.Secret{ObjectMeta: nn(c, resources.AuthSecretName(c))}, true,
			func() client.Object {
				d := p.desired()
				if p.w.status.Primary != "" {
					d.Password = ""
				}
				return resources.MakeAuthSecret(d)
			},
			func(o client.Object) (client.Object, bool) {
				d := p.desired()
				d.Password = resources.PasswordFromAuthSecret(o.(*corev1.Secret))
				return resources.UpdateAuthSecret(d, o.(*corev1.Secret))
			})
		p.w.current = resources.PasswordFromAuthSecret(cur.(*corev1.Secret))
	}
	if c.Spec.Auth.PasswordSecret == nil {
		// Auth switched off: the servers keep the password they were set up with
		// until the rotation removes it; the auth Secret still records it.
		obj, found, err := p.get("get:auth-secret", &corev1.Secret{ObjectMeta: nn(c, resources.AuthSecretName(c))})
		if err != nil {
			p.apiErr("read the auth Secret", err)
		}
		if found {
			p.w.current = resources.PasswordFromAuthSecret(obj.(*corev1.Secret))
		}
	}
	if c.Spec.TLS.Enabled {
		obj, found, err := p.get("get:tls-secret", &corev1.Secret{ObjectMeta: nn(c, c.Spec.TLS.SecretName)})
		if err != nil {
			p.apiErr("read the TLS Secret", err)
		}
		if !found {
			p.block("TLSSecretMissing", fmt.Sprintf("Secret %q (spec.tls.secretName) does not exist: create it (tls.crt, tls.key, ca.crt)", c.Spec.TLS.SecretName), 15*time.Second)
		}
		d := obj.(*corev1.Secret).Data
		for _, k := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"} {
			if len(d[k]) == 0 {
				p.block("TLSSecretInvalid", fmt.Sprintf("Secret %q has no %s: it needs tls.crt, tls.key and ca.crt", c.Spec.TLS.SecretName, k), 15*time.Second)
			}
		}
		p.w.tls = &valkey.TLS{CA: d["ca.crt"], Cert: d[corev1.TLSCertKey], Key: d[corev1.TLSPrivateKeyKey]}
	}
}

// ensure keeps one object: created when missing, updated when the operator's
// fields differ, deleted (if the cluster owns it) when not wanted. An object of
// that name controlled by someone else blocks the pass.
func (p *pass) ensure(name string, empty client.Object, want bool, mk func() client.Object, upd func(client.Object) (client.Object, bool)) client.Object {
	cur, found, err := p.get("get:"+name, empty)
	if err != nil {
		p.apiErr("read "+name, err)
	}
	if !want {
		if found && resources.IsOwnedBy(cur, p.c) {
			if _, err := p.write("delete:"+name, Delete, cur, "not wanted any more"); err != nil && !isNotFound(err) {
				p.apiErr("delete "+name, err)
			}
		}
		return nil
	}
	if !found {
		obj, err := p.write("create:"+name, Create, mk(), "missing")
		if apierrors.IsAlreadyExists(err) {
			// Invisible to the operator's cache (not labelled as its own) but there.
			p.block("ResourceConflict", fmt.Sprintf("%s %q already exists and is not managed by this ValkeyCluster: delete or rename it", name, empty.GetName()), 30*time.Second)
		}
		if err != nil {
			p.apiErr("create "+name, err)
		}
		return obj
	}
	if ref := metav1.GetControllerOf(cur); ref != nil && ref.UID != p.c.UID {
		p.block("ResourceConflict", fmt.Sprintf("%s %q is controlled by %s %q, not by this ValkeyCluster: delete or rename it", name, cur.GetName(), ref.Kind, ref.Name), 30*time.Second)
	}
	next, changed := upd(cur)
	if !changed {
		return cur
	}
	obj, err := p.write("update:"+name, Update, next, "fields owned by the operator differ")
	if err != nil {
		p.apiErr("update "+name, err)
	}
	return obj
}

// configMap keeps the ConfigMap and reads the operator's record from it. A new
// ConfigMap gets the restart-only keys of spec.config (they must be in the file
// when the servers start); live keys are added once the servers accepted them.
func (p *pass) configMap() {
	c := p.c
	cur, found, err := p.get("get:configmap", &corev1.ConfigMap{ObjectMeta: nn(c, resources.ConfigMapName(c))})
	if err != nil {
		p.apiErr("read the ConfigMap", err)
	}
	if found {
		a, err := conf.ParseApplied(cur.(*corev1.ConfigMap).Data[conf.AppliedKey])
		if err != nil {
			p.block("ConfigRecordInvalid", err.Error(), time.Minute)
		}
		p.w.applied = a
	} else {
		p.w.applied = conf.Applied{}.WithRestartChanges(conf.Diff(c.Spec.Config, conf.Applied{}, c.Spec.Image))
	}
	obj := p.ensure("configmap", &corev1.ConfigMap{ObjectMeta: nn(c, resources.ConfigMapName(c))}, true,
		func() client.Object { return resources.MakeConfigMap(p.desired()) },
		func(o client.Object) (client.Object, bool) {
			return resources.UpdateConfigMap(p.desired(), o.(*corev1.ConfigMap))
		})
	p.w.cm = obj.(*corev1.ConfigMap)
}

func (p *pass) services() {
	c := p.c
	p.ensure("headless-service", &corev1.Service{ObjectMeta: nn(c, resources.HeadlessServiceName(c))}, true,
		func() client.Object { return resources.MakeHeadlessService(p.desired()) },
		func(o client.Object) (client.Object, bool) {
			return resources.UpdateHeadlessService(p.desired(), o.(*corev1.Service))
		})
	p.ensure("client-service", &corev1.Service{ObjectMeta: nn(c, resources.ClientServiceName(c))}, true,
		func() client.Object { return resources.MakeClientService(p.desired()) },
		func(o client.Object) (client.Object, bool) {
			return resources.UpdateClientService(p.desired(), o.(*corev1.Service))
		})
}

func (p *pass) pdb() {
	c := p.c
	p.ensure("pdb", &policyv1.PodDisruptionBudget{ObjectMeta: nn(c, resources.PDBName(c))}, resources.WantPDB(p.desired()),
		func() client.Object { return resources.MakePDB(p.desired()) },
		func(o client.Object) (client.Object, bool) {
			return resources.UpdatePDB(p.desired(), o.(*policyv1.PodDisruptionBudget))
		})
}

// statefulSet keeps the StatefulSet. When an immutable field must change (the
// claim size grows), the claims are expanded and the StatefulSet is deleted with
// its pods orphaned; the next pass creates it again and it adopts the pods.
func (p *pass) statefulSet() {
	c := p.c
	cur, found, err := p.get("get:statefulset", &appsv1.StatefulSet{ObjectMeta: nn(c, resources.StatefulSetName(c))})
	if err != nil {
		p.apiErr("read the StatefulSet", err)
	}
	if found {
		sts := cur.(*appsv1.StatefulSet)
		if ref := metav1.GetControllerOf(sts); ref != nil && ref.UID != c.UID {
			p.block("ResourceConflict", fmt.Sprintf("StatefulSet %q is controlled by %s %q: delete or rename it", sts.Name, ref.Kind, ref.Name), 30*time.Second)
		}
		if re, why := resources.StatefulSetNeedsRecreate(p.desired(), sts); re {
			p.expandClaims()
			if _, err := p.write("delete:statefulset", Delete, orphan(sts), "recreate: "+why); err != nil && !isNotFound(err) {
				p.apiErr("delete the StatefulSet to recreate it", err)
			}
			p.emit("recreate-sts", corev1.EventTypeNormal, "StatefulSetRecreated", "StatefulSet deleted (pods kept) to change an immutable field: "+why)
			p.w.wantRequeue(500 * time.Millisecond)
			p.finishStatus()
			p.end(p.w.requeue, nil, "StatefulSet recreated: "+why)
		}
	}
	obj := p.ensure("statefulset", &appsv1.StatefulSet{ObjectMeta: nn(c, resources.StatefulSetName(c))}, true,
		func() client.Object { return resources.MakeStatefulSet(p.desired()) },
		func(o client.Object) (client.Object, bool) {
			return resources.UpdateStatefulSet(p.desired(), o.(*appsv1.StatefulSet))
		})
	p.w.sts = obj.(*appsv1.StatefulSet)
}

// orphanMarker is the annotation that makes the executor delete with
// propagation Orphan (kept on a copy, never stored).
func orphan(sts *appsv1.StatefulSet) *appsv1.StatefulSet {
	out := sts.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[annotationOrphan] = "true"
	return out
}

const annotationOrphan = "valkey.gauntlet.dev/internal-delete-orphan"

// IsOrphanDelete reports whether a Delete request asks for propagation Orphan.
func IsOrphanDelete(obj client.Object) bool { return obj.GetAnnotations()[annotationOrphan] == "true" }

// expandClaims grows the data claims to spec.persistence.size.
func (p *pass) expandClaims() {
	c := p.c
	if !c.Spec.Persistence.Enabled {
		return
	}
	r := p.call("list:claims", func() Request {
		return Request{Kind: List, List: &corev1.PersistentVolumeClaimList{}, Namespace: c.Namespace, Labels: resources.SelectorLabels(c), Why: "claims to expand"}
	})
	if r.Err != nil {
		p.apiErr("list the data claims", r.Err)
	}
	claims := r.List.(*corev1.PersistentVolumeClaimList).Items
	sort.Slice(claims, func(i, j int) bool { return claims[i].Name < claims[j].Name })
	want := c.Spec.Persistence.Size
	for i := range claims {
		pvc := claims[i].DeepCopy()
		cur := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if cur.Cmp(want) >= 0 {
			continue
		}
		if pvc.Spec.Resources.Requests == nil {
			pvc.Spec.Resources.Requests = corev1.ResourceList{}
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want
		if _, err := p.write("expand:"+pvc.Name, Update, pvc, "grow to "+want.String()); err != nil {
			p.block("VolumeExpansionFailed", fmt.Sprintf("claim %s cannot grow to %s: %v (does its StorageClass allow volume expansion?)", pvc.Name, want.String(), err), time.Minute)
		}
	}
}

// listPods reads the cluster's pods, sorted by ordinal.
func (p *pass) listPods() {
	c := p.c
	r := p.call("list:pods", func() Request {
		return Request{Kind: List, List: &corev1.PodList{}, Namespace: c.Namespace, Labels: resources.SelectorLabels(c), Why: "observe the pods"}
	})
	if r.Err != nil {
		p.apiErr("list the pods", r.Err)
	}
	items := r.List.(*corev1.PodList).Items
	var pods []*podRef
	for i := range items {
		pod := items[i].DeepCopy()
		ord, ok := ordinalOf(c, pod.Name)
		if !ok {
			continue
		}
		pods = append(pods, &podRef{name: pod.Name, ordinal: ord, pod: pod, ip: pod.Status.PodIP, running: containerRunning(pod)})
	}
	sort.Slice(pods, func(i, j int) bool { return pods[i].ordinal < pods[j].ordinal })
	p.w.pods = pods
}

func containerRunning(pod *corev1.Pod) bool {
	if pod.Status.PodIP == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == resources.ContainerValkey {
			return cs.State.Running != nil
		}
	}
	return false
}

// stalledReasons are the waiting reasons a container does not leave by itself.
var stalledReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true}

// stalled reports whether a container of pod waits in a state it does not
// leave by itself (failover.Pod.Stalled).
func stalled(pod *corev1.Pod) bool {
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && stalledReasons[w.Reason] {
			return true
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (p *pass) findPod(name string) *podRef {
	for _, r := range p.w.pods {
		if r.name == name {
			return r
		}
	}
	return nil
}

// observe asks every running pod for INFO.
func (p *pass) observe() {
	for _, r := range p.w.pods {
		if r.running && !p.healthDown(r) {
			p.info("info:"+r.name, r)
		}
	}
}

// healthDown: the health checks say the pod at its current address is down;
// asking it again would only wait for a timeout.
func (p *pass) healthDown(r *podRef) bool {
	h, ok := p.in.Health[r.name]
	return ok && r.ip != "" && h.Addr == net.JoinHostPort(r.ip, strconv.Itoa(conf.Port)) &&
		h.SubjectivelyDown(p.in.Now, p.c.Spec.Failover.DownAfter.Duration)
}

func (p *pass) info(key string, r *podRef) {
	reply, err := p.valkeyCmd(key, *r, "observe", valkey.CmdInfo()...)
	if err != nil {
		r.observed, r.infoErr = false, err
		return
	}
	in, err := valkey.ParseInfo(reply.String())
	if err != nil {
		r.observed, r.infoErr = false, err
		return
	}
	r.observed, r.info, r.infoErr = true, in, nil
}

// view assembles the failover view.
func (p *pass) view() failover.View {
	c := p.c
	v := failover.View{
		Primary: p.w.status.Primary, Port: conf.Port, FenceHost: conf.FenceHost, FencePort: conf.FencePort,
		Now: p.in.Now, DownAfter: c.Spec.Failover.DownAfter.Duration, Persistence: c.Spec.Persistence.Enabled,
		Replicas: int(c.Spec.Replicas), BootstrapGrace: BootstrapGrace,
		NeverServed: p.w.status.LastFailoverTime == nil && !everServed(p.w.status),
		Ghosts:      p.w.ghosts,
	}
	updateRev := ""
	if p.w.sts != nil {
		updateRev = p.w.sts.Status.UpdateRevision
	}
	for _, r := range p.w.pods {
		fp := failover.Pod{
			Name: r.name, Ordinal: r.ordinal, IP: r.ip, Running: r.running,
			Deleting: r.pod.DeletionTimestamp != nil, Ready: podReady(r.pod), Stalled: stalled(r.pod),
			Label:    r.pod.Labels[v1alpha1.LabelRole],
			UpToDate: updateRev == "" || r.pod.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRev,
			Observed: r.observed, Info: r.info,
			Age: p.in.Now.Sub(r.pod.CreationTimestamp.Time),
		}
		// A pod that answered INFO in this pass is up, whatever older checks said.
		if h, ok := p.in.Health[r.name]; ok && !r.observed && r.ip != "" && h.Addr == net.JoinHostPort(r.ip, strconv.Itoa(conf.Port)) {
			if h.SubjectivelyDown(p.in.Now, v.DownAfter) {
				fp.Down, fp.DownSince = true, h.DownSince()
			}
		}
		v.Pods = append(v.Pods, fp)
	}
	return v
}
