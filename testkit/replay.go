package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/gauntlet-dev/gauntlet/campaign"
	"github.com/gauntlet-dev/gauntlet/internal/readiness"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/reports"
)

// FieldManager is the server-side apply field manager of the desired states.
const FieldManager = "gauntlet-reproducer"

// settleWindow is how long a namespace whose workloads are not all ready must
// stay unchanged to count as settled (the campaign's default): the checks
// then judge what it settled to.
const settleWindow = 30 * time.Second

// resource is a namespaced resource whose objects count for convergence.
type resource struct {
	gvr  schema.GroupVersionResource
	kind string
}

// replayer declares a reproducer's steps in one namespace and judges them.
// Its methods return errors; Run turns them into test failures.
type replayer struct {
	client    dynamic.Interface
	mapper    meta.RESTMapper
	watched   []resource
	namespace string
	crd       reports.CRDRef
	converge  time.Duration
	quiet     time.Duration
	settle    time.Duration
	alarm     string
	logf      func(format string, args ...any)
	// cleanup is set when the namespace and CR outlive the test unless deleted
	// (a KUBECONFIG cluster); an embedded cluster goes as a whole.
	cleanup bool
	applied map[string]bool
	// poll is the interval between checks (1 s; tests shorten it).
	poll time.Duration
}

// newReplayer connects to the cluster and lists the namespaced resources whose
// objects count for convergence.
func newReplayer(ctx context.Context, cfg *rest.Config, r Reproducer, logf func(string, ...any)) (*replayer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	rp := &replayer{
		client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		namespace: r.Namespace, crd: r.CRD, converge: r.ConvergeTimeout, quiet: r.Quiet, settle: max(settleWindow, r.Quiet),
		alarm: r.Alarm(), logf: logf, applied: map[string]bool{}, poll: time.Second,
	}
	lists, err := dc.ServerPreferredNamespacedResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the cluster's resources: %w", err)
	}
	rp.watched = watchable(lists)
	return rp, nil
}

// watchable keeps the listable resources that do not change on their own.
func watchable(lists []*metav1.APIResourceList) []resource {
	var out []resource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") || volatile(gv.Group, res.Name) {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(res.Name), kind: res.Kind})
		}
	}
	return out
}

func hasVerb(verbs metav1.Verbs, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// volatile resources change on their own (events, leader-election leases,
// deprecated endpoints) and would keep the namespace from ever looking quiet.
func volatile(group, resource string) bool {
	switch group + "/" + resource {
	case "/events", "events.k8s.io/events", "coordination.k8s.io/leases", "/endpoints":
		return true
	}
	return false
}

func (rp *replayer) namespaces() dynamic.ResourceInterface {
	return rp.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"})
}

func (rp *replayer) pods() dynamic.ResourceInterface {
	return rp.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace(rp.namespace)
}

// ensureNamespace creates the namespace when it is missing; created says it did.
func (rp *replayer) ensureNamespace(ctx context.Context) (created bool, err error) {
	_, err = rp.namespaces().Get(ctx, rp.namespace, metav1.GetOptions{})
	switch {
	case err == nil:
		return false, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get namespace %s: %w", rp.namespace, err)
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": rp.namespace},
	}}
	if _, err := rp.namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return false, fmt.Errorf("create namespace %s: %w", rp.namespace, err)
	}
	return true, nil
}

// deleteNamespace deletes the namespace and waits until it is gone.
func (rp *replayer) deleteNamespace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, rp.converge)
	defer cancel()
	if err := rp.namespaces().Delete(ctx, rp.namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", rp.namespace, err)
	}
	if err := rp.waitGone(ctx, rp.namespaces(), rp.namespace); err != nil {
		return fmt.Errorf("namespace %s: %w", rp.namespace, err)
	}
	return nil
}

// crClient is the client of the custom resource in the namespace.
func (rp *replayer) crClient() (dynamic.ResourceInterface, error) {
	gv := schema.GroupVersion{Group: rp.crd.Group, Version: rp.crd.Version}
	gvr := gv.WithResource(rp.crd.Resource)
	if rp.crd.Resource == "" {
		m, err := rp.mapping(schema.GroupVersionKind{Group: rp.crd.Group, Version: rp.crd.Version, Kind: rp.crd.Kind})
		if err != nil {
			return nil, fmt.Errorf("find the resource of %s (is its CRD installed?): %w", rp.crd.Kind, err)
		}
		gvr = m.Resource
	}
	return rp.client.Resource(gvr).Namespace(rp.namespace), nil
}

// mapping resolves a kind to its resource, refreshing discovery once on a miss.
func (rp *replayer) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := rp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		if rs, ok := rp.mapper.(meta.ResettableRESTMapper); ok {
			rs.Reset()
			m, err = rp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	return m, err
}

// deleteCR deletes the custom resource name and waits until it is gone.
func (rp *replayer) deleteCR(ctx context.Context, name string) error {
	ctx, cancel := context.WithTimeout(ctx, rp.converge)
	defer cancel()
	crs, err := rp.crClient()
	if err != nil {
		return err
	}
	if err := crs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", rp.crd.Kind, name, err)
	}
	if err := rp.waitGone(ctx, crs, name); err != nil {
		return fmt.Errorf("%s %s: %w", rp.crd.Kind, name, err)
	}
	return nil
}

// step replays step i: pods killed before the desired state, the desired
// state declared and converged, the killed pods' replacements awaited, pods
// killed once it converged and their replacements awaited, and after any
// kill the namespace converged again. fresh is the CR's name the first time
// the replay applies it ("" otherwise), for the caller to delete afterwards.
func (rp *replayer) step(ctx context.Context, i int, desired Object, recreate bool, faults []Fault) (fresh string, err error) {
	var before, after []string
	for _, f := range faults {
		switch {
		case f.Kind != PodKill:
			return "", fmt.Errorf("step %d: the test kit cannot inject the fault %s", i, f.Kind)
		case f.Before:
			before = append(before, f.Pods...)
		default:
			after = append(after, f.Pods...)
		}
	}
	killedBefore, err := rp.killPods(ctx, i, before)
	if err != nil {
		return "", err
	}
	name, gen, err := rp.declare(ctx, i, desired, recreate)
	if err != nil {
		return "", err
	}
	if !rp.applied[name] {
		rp.applied[name] = true
		fresh = name
	}
	if err := rp.waitConverged(ctx, i, name, gen); err != nil {
		return fresh, err
	}
	if err := rp.waitReplaced(ctx, i, killedBefore); err != nil {
		return fresh, err
	}
	killedAfter, err := rp.killPods(ctx, i, after)
	if err != nil {
		return fresh, err
	}
	if err := rp.waitReplaced(ctx, i, killedAfter); err != nil {
		return fresh, err
	}
	if len(killedBefore)+len(killedAfter) == 0 {
		return fresh, nil
	}
	crs, err := rp.crClient()
	if err != nil {
		return fresh, err
	}
	cr, err := crs.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fresh, fmt.Errorf("step %d: get %s %s after the fault: %w", i, rp.crd.Kind, name, err)
	}
	return fresh, rp.waitConverged(ctx, i, name, cr.GetGeneration())
}

// declare applies one desired state with server-side apply (deleting the CR
// first when recreate is set) and returns the CR's name and the generation
// the apply produced.
func (rp *replayer) declare(ctx context.Context, i int, desired Object, recreate bool) (string, int64, error) {
	clean, err := reports.CleanDesired(desired, rp.crd)
	if err != nil {
		return "", 0, fmt.Errorf("step %d: %w", i, err)
	}
	obj, err := plainJSON(clean)
	if err != nil {
		return "", 0, fmt.Errorf("step %d: %w", i, err)
	}
	u := &unstructured.Unstructured{Object: obj}
	u.SetNamespace(rp.namespace)
	crs, err := rp.crClient()
	if err != nil {
		return "", 0, fmt.Errorf("step %d: %w", i, err)
	}
	name := u.GetName()
	if recreate {
		if err := crs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", 0, fmt.Errorf("step %d: delete %s %s to re-create it: %w", i, rp.crd.Kind, name, err)
		}
		if err := rp.waitGone(ctx, crs, name); err != nil {
			return "", 0, fmt.Errorf("step %d: %s %s: %w", i, rp.crd.Kind, name, err)
		}
	}
	applied, err := crs.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return "", 0, fmt.Errorf("step %d: server-side apply of %s %s: %w", i, rp.crd.Kind, name, err)
	}
	rp.logf("step %d: declared %s %s (generation %d)", i, rp.crd.Kind, name, applied.GetGeneration())
	return name, applied.GetGeneration(), nil
}

// plainJSON turns a JSON value with json.Number leaves into the int64 and
// float64 leaves the API machinery expects.
func plainJSON(obj map[string]any) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode the desired state: %w", err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode the desired state: %w", err)
	}
	return out, nil
}

// waitConverged returns once the CR's status.observedGeneration has reached
// generation (where the operator publishes it) and the namespace's objects
// have not changed for the quiet window with every pod and workload ready,
// or for the settle window when they are not.
func (rp *replayer) waitConverged(ctx context.Context, i int, name string, generation int64) error {
	crKey := model.ObjectKey{Group: rp.crd.Group, Version: rp.crd.Version, Kind: rp.crd.Kind, Namespace: rp.namespace, Name: name}.String()
	start := time.Now()
	deadline := start.Add(rp.converge)
	last, lastChange := "", start
	for {
		objs, print, err := rp.objects(ctx)
		if err != nil {
			return fmt.Errorf("step %d: %w", i, err)
		}
		now := time.Now()
		if print != last {
			last, lastChange = print, now
		}
		observed, published := observedGeneration(objs[crKey])
		notReady, _ := campaign.Readiness(objs, crKey)
		genOK := !published || observed >= generation
		quiet := now.Sub(lastChange)
		switch converged(quiet, rp.quiet, rp.settle, notReady, genOK) {
		case stateConverged:
			rp.logf("step %d: converged after %v", i, lastChange.Sub(start).Round(100*time.Millisecond))
			return nil
		case stateSettled:
			rp.logf("step %d: settled after %v, not ready: %s", i, lastChange.Sub(start).Round(100*time.Millisecond), strings.Join(notReady, "; "))
			return nil
		}
		if now.After(deadline) {
			return fmt.Errorf("step %d: %s %s did not converge within %v (observedGeneration %d, want %d; objects last changed %v ago; not ready: %v)",
				i, rp.crd.Kind, name, rp.converge, observed, generation, quiet.Round(time.Second), notReady)
		}
		if err := sleep(ctx, rp.poll); err != nil {
			return fmt.Errorf("step %d: waiting for %s %s to converge: %w", i, rp.crd.Kind, name, err)
		}
	}
}

// convergence is the decision of one convergence check.
type convergence int

const (
	stateWaiting convergence = iota
	stateConverged
	stateSettled
)

// converged is the convergence rule (the campaign's): nothing happens before
// the CR's generation is observed; then quiet for the quiet window with
// everything ready, or quiet for the settle window regardless.
func converged(quiet, quietWindow, settleWindow time.Duration, notReady []string, genOK bool) convergence {
	switch {
	case !genOK:
		return stateWaiting
	case quiet >= quietWindow && len(notReady) == 0:
		return stateConverged
	case quiet >= settleWindow:
		return stateSettled
	}
	return stateWaiting
}

// observedGeneration is the CR's status.observedGeneration and whether it
// publishes one.
func observedGeneration(cr model.Object) (int64, bool) {
	if cr == nil {
		return -1, false
	}
	og, found, err := unstructured.NestedInt64(cr, "status", "observedGeneration")
	if err != nil || !found {
		return -1, false
	}
	return og, true
}

// objects lists every watched object in the namespace, keyed by
// model.ObjectKey, with a fingerprint of their resourceVersions.
func (rp *replayer) objects(ctx context.Context) (map[string]model.Object, string, error) {
	objs := map[string]model.Object{}
	var keys []string
	for _, res := range rp.watched {
		l, err := rp.client.Resource(res.gvr).Namespace(rp.namespace).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("list %s: %w", res.gvr, err)
		}
		for _, o := range l.Items {
			key := model.ObjectKey{Group: res.gvr.Group, Version: res.gvr.Version, Kind: res.kind, Namespace: o.GetNamespace(), Name: o.GetName()}.String()
			objs[key] = o.Object
			keys = append(keys, key+"@"+o.GetResourceVersion())
		}
	}
	sort.Strings(keys)
	return objs, strings.Join(keys, "\n"), nil
}

func (rp *replayer) waitGone(ctx context.Context, ri dynamic.ResourceInterface, name string) error {
	for {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err := sleep(ctx, rp.poll/2); err != nil {
			return fmt.Errorf("still present after deletion: %w", err)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// kill is a pod the replay deleted: its name and UID, and its controller with
// how many of the controller's pods were ready before.
type kill struct {
	name        string
	uid         types.UID
	owner       *metav1.OwnerReference
	readyBefore int
}

// killPods deletes the named pods with grace period 0, as the recorded run's
// pod-kill fault did, once each exists (waiting for it at most the
// convergence timeout).
func (rp *replayer) killPods(ctx context.Context, i int, names []string) ([]kill, error) {
	var out []kill
	for _, name := range names {
		p, err := rp.existingPod(ctx, i, name)
		if err != nil {
			return nil, err
		}
		k := kill{name: name, uid: p.GetUID(), owner: metav1.GetControllerOf(p)}
		if k.owner != nil {
			if k.readyBefore, err = rp.readyOwned(ctx, k.owner.UID); err != nil {
				return nil, fmt.Errorf("step %d: %w", i, err)
			}
		} else {
			rp.logf("step %d: pod %s has no controller: nothing recreates it, so the replay will not wait for it", i, name)
		}
		zero, uid := int64(0), p.GetUID()
		err = rp.pods().Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("step %d: delete pod %s with grace period 0 (the recorded run's pod-kill fault): %w", i, name, err)
		}
		rp.logf("step %d: pod-kill fault: deleted pod %s with grace period 0", i, name)
		out = append(out, k)
	}
	return out, nil
}

// existingPod returns the named pod once it exists and is not being deleted.
func (rp *replayer) existingPod(ctx context.Context, i int, name string) (*unstructured.Unstructured, error) {
	deadline := time.Now().Add(rp.converge)
	for {
		p, err := rp.pods().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil && p.GetDeletionTimestamp() == nil:
			return p, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("step %d: get pod %s to inject the pod-kill fault: %w", i, name, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("step %d: pod %s, which the recorded run's pod-kill fault hit, is not running in namespace %s after %v: the reproducer's fault does not match this system's pods; replay it with gauntlet reproduce",
				i, name, rp.namespace, rp.converge)
		}
		if err := sleep(ctx, rp.poll/2); err != nil {
			return nil, fmt.Errorf("step %d: waiting for pod %s: %w", i, name, err)
		}
	}
}

// waitReplaced returns once every killed pod has been replaced (see replaced).
func (rp *replayer) waitReplaced(ctx context.Context, i int, killed []kill) error {
	if len(killed) == 0 {
		return nil
	}
	deadline := time.Now().Add(rp.converge)
	for {
		var pending []string
		for _, k := range killed {
			if why := rp.replaced(ctx, k); why != "" {
				pending = append(pending, "pod "+k.name+" "+why)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("step %d: %v after the pod-kill fault: %s", i, rp.converge, strings.Join(pending, "; "))
		}
		if err := sleep(ctx, rp.poll); err != nil {
			return fmt.Errorf("step %d: waiting for the killed pods to be replaced (%s): %w", i, strings.Join(pending, "; "), err)
		}
	}
}

// replaced says what a killed pod still lacks to count as replaced ("" once
// it is): recreated under its name and Running and Ready, or, when it does
// not come back under its name, its controller has as many pods Running and
// Ready as it wants (spec.replicas, else as many as before the kill). A pod
// without a controller is not waited for.
func (rp *replayer) replaced(ctx context.Context, k kill) string {
	p, err := rp.pods().Get(ctx, k.name, metav1.GetOptions{})
	switch {
	case err == nil && p.GetUID() == k.uid:
		return "is still terminating"
	case err == nil && p.GetDeletionTimestamp() != nil:
		return "was recreated but its replacement is terminating"
	case err == nil:
		if pr := readiness.Check("", "Pod", p.Object); len(pr) > 0 {
			return fmt.Sprintf("was recreated but is not Running and Ready (%s)", pr[0].Detail)
		}
		return ""
	case !apierrors.IsNotFound(err):
		return "could not be read: " + err.Error()
	case k.owner == nil:
		return ""
	}
	want, err := rp.wantedReplicas(ctx, k.owner)
	if err != nil {
		return "is gone and its controller could not be read: " + err.Error()
	}
	if want < 0 {
		want = k.readyBefore
	}
	ready, err := rp.readyOwned(ctx, k.owner.UID)
	if err != nil {
		return "is gone and its controller's pods could not be listed: " + err.Error()
	}
	if ready < want {
		return fmt.Sprintf("is not recreated: its controller %s %s has %d of %d pods Running and Ready", k.owner.Kind, k.owner.Name, ready, want)
	}
	return ""
}

// wantedReplicas is the controller's spec.replicas: 0 when the controller is
// gone (or replaced), -1 when it has no such field.
func (rp *replayer) wantedReplicas(ctx context.Context, ref *metav1.OwnerReference) (int, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return 0, fmt.Errorf("controller %s %s: %w", ref.Kind, ref.Name, err)
	}
	m, err := rp.mapping(gv.WithKind(ref.Kind))
	if err != nil {
		return 0, fmt.Errorf("find the resource of %s %s: %w", ref.Kind, ref.Name, err)
	}
	obj, err := rp.client.Resource(m.Resource).Namespace(rp.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && obj.GetUID() != ref.UID) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get %s %s: %w", ref.Kind, ref.Name, err)
	}
	n, found, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if err != nil || !found {
		return -1, nil
	}
	return int(n), nil
}

// readyOwned counts the Running and Ready pods the controller owns.
func (rp *replayer) readyOwned(ctx context.Context, owner types.UID) (int, error) {
	l, err := rp.pods().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, fmt.Errorf("list pods in %s: %w", rp.namespace, err)
	}
	n := 0
	for i := range l.Items {
		p := &l.Items[i]
		if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != owner || p.GetDeletionTimestamp() != nil {
			continue
		}
		if ready, _ := readiness.PodReady(p.Object); ready {
			n++
		}
	}
	return n, nil
}
