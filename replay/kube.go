// Package replay is how Gauntlet drives an operator's system through a
// sequence of desired states: declaring one (server-side apply, with the
// emptied-map merge patch, the admission-webhook retry and re-creation),
// injecting and healing faults (through package faults), observing a
// namespace's objects (informers) and the single convergence rule (the quiet
// window, readiness and observedGeneration). A campaign's workers, its
// minimization, `gauntlet reproduce` and the generated Go tests (package
// testkit) all replay through it, and Reproducer is the one reproducer type
// they share: written to reproducer.json, rendered into a Go test and run by
// testkit.
package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"

	"github.com/gauntlet-dev/gauntlet/internal/jsonv"
	"github.com/gauntlet-dev/gauntlet/internal/x509view"
	"github.com/gauntlet-dev/gauntlet/model"
	"github.com/gauntlet-dev/gauntlet/targets"
)

// FieldManager is the server-side apply field manager of every desired state.
const FieldManager = "gauntlet"

// Kube is a connection to the cluster a replay drives.
type Kube struct {
	cfg    *rest.Config
	name   string
	dyn    dynamic.Interface
	cs     kubernetes.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	log    *slog.Logger

	// opNS and opLabels find the operator's pods (SetOperator).
	opNS     string
	opLabels map[string]string
}

// NewKube connects to the cluster cfg reaches (name is for messages).
func NewKube(cfg *rest.Config, name string, log *slog.Logger) (*Kube, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for %s: %w", name, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", name, err)
	}
	k := newKube(name, dyn, cs, log)
	k.cfg = cfg
	return k, nil
}

func newKube(name string, dyn dynamic.Interface, cs kubernetes.Interface, log *slog.Logger) *Kube {
	disc := memory.NewMemCacheClient(cs.Discovery())
	return &Kube{name: name, dyn: dyn, cs: cs, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc), log: log}
}

// RESTConfig is the configuration the clients were made from (nil for a
// Kube made from clients).
func (k *Kube) RESTConfig() *rest.Config { return k.cfg }

// Clientset is the typed client.
func (k *Kube) Clientset() kubernetes.Interface { return k.cs }

// Dynamic is the dynamic client.
func (k *Kube) Dynamic() dynamic.Interface { return k.dyn }

// SetOperator says where the operator's pods are: their namespace and labels
// (the webhook diagnosis and operator faults find them there).
func (k *Kube) SetOperator(ns string, labels map[string]string) { k.opNS, k.opLabels = ns, labels }

// Operator is where the operator's pods are (SetOperator).
func (k *Kube) Operator() (ns string, labels map[string]string) { return k.opNS, k.opLabels }

// ResetMapper forgets the kinds discovery resolved (after CRDs were installed).
func (k *Kube) ResetMapper() { k.mapper.Reset() }

// Mapping resolves an object's kind to its resource, refreshing discovery once on a miss.
func (k *Kube) Mapping(obj map[string]any) (*meta.RESTMapping, error) {
	u := unstructured.Unstructured{Object: obj}
	gvk := u.GroupVersionKind()
	m, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		k.mapper.Reset()
		m, err = k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", gvk, err)
	}
	return m, nil
}

// resource returns the dynamic client for obj in namespace ns (or defaultNS).
func (k *Kube) resource(obj map[string]any, defaultNS string) (dynamic.ResourceInterface, string, error) {
	m, err := k.Mapping(obj)
	if err != nil {
		return nil, "", err
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return k.dyn.Resource(m.Resource), "", nil
	}
	u := unstructured.Unstructured{Object: obj}
	ns := u.GetNamespace()
	if ns == "" {
		ns = defaultNS
	}
	if ns == "" {
		ns = "default"
	}
	return k.dyn.Resource(m.Resource).Namespace(ns), ns, nil
}

// Apply server-side applies obj (forcing conflicts: the harness owns the desired state).
//
// An empty object in obj ({}) inside which the harness's earlier applies set
// fields is emptied first, with a JSON merge patch that removes those fields:
// server-side apply alone would remove them and leave the object null
// (structured-merge-diff turns a map it empties into null), which a CRD field
// of type object refuses ("must be of type object: null"), where the desired
// state says {}.
func (k *Kube) Apply(ctx context.Context, obj map[string]any, defaultNS string) error {
	ri, ns, err := k.resource(obj, defaultNS)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: jsonv.CopyMap(obj)}
	if ns != "" {
		u.SetNamespace(ns)
	}
	if empty := emptyObjectPaths(u.Object, nil); len(empty) > 0 {
		if err := k.emptyOwnedFields(ctx, ri, u.GetName(), empty); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), ns, u.GetName(), err)
		}
	}
	if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", u.GetKind(), ns, u.GetName(), err)
	}
	return nil
}

// emptyObjectPaths lists the paths (through maps only, never into lists or
// metadata) at which obj holds an empty object.
func emptyObjectPaths(obj map[string]any, at []string) [][]string {
	var out [][]string
	for key, v := range obj {
		m, ok := v.(map[string]any)
		if !ok || (len(at) == 0 && key == "metadata") {
			continue
		}
		p := append(append([]string(nil), at...), key)
		if len(m) == 0 {
			out = append(out, p)
			continue
		}
		out = append(out, emptyObjectPaths(m, p)...)
	}
	return out
}

// emptyOwnedFields removes, with one JSON merge patch, the fields that the
// harness's server-side applies own (and no other manager does) inside each of
// the live object's maps at paths. Nothing is sent when there are none, or the
// object does not exist yet.
func (k *Kube) emptyOwnedFields(ctx context.Context, ri dynamic.ResourceInterface, name string, paths [][]string) error {
	live, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the live object to empty {} fields: %w", err)
	}
	patch := removalPatch(live.Object, live.GetManagedFields(), paths)
	if patch == nil {
		return nil
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := ri.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("empty the objects the desired state declares as {} (merge patch %s): %w", body, err)
	}
	return nil
}

// removalPatch is the JSON merge patch that sets to null every field of live
// inside the maps at paths that FieldManager's apply owns and no other manager
// does; nil when there is none.
func removalPatch(live map[string]any, managed []metav1.ManagedFieldsEntry, paths [][]string) map[string]any {
	var mine map[string]any
	others := []map[string]any{}
	for _, e := range managed {
		if e.FieldsV1 == nil {
			continue
		}
		var fs map[string]any
		if json.Unmarshal(e.FieldsV1.Raw, &fs) != nil {
			continue
		}
		if e.Manager == FieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
			mine = fs
		} else {
			others = append(others, fs)
		}
	}
	if mine == nil {
		return nil
	}
	var patch map[string]any
	for _, p := range paths {
		lv, ok := nestedMap(live, p)
		if !ok || len(lv) == 0 {
			continue
		}
		owned := fieldsAt(mine, p)
		for key := range lv {
			if _, ok := owned["f:"+key]; !ok {
				continue
			}
			shared := false
			for _, o := range others {
				if _, ok := fieldsAt(o, p)["f:"+key]; ok {
					shared = true
				}
			}
			if shared {
				continue
			}
			if patch == nil {
				patch = map[string]any{}
			}
			cur := patch
			for _, seg := range p {
				next, _ := cur[seg].(map[string]any)
				if next == nil {
					next = map[string]any{}
					cur[seg] = next
				}
				cur = next
			}
			cur[key] = nil
		}
	}
	return patch
}

// nestedMap returns the map at path in obj.
func nestedMap(obj map[string]any, path []string) (map[string]any, bool) {
	cur := obj
	for _, seg := range path {
		next, ok := cur[seg].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

// fieldsAt walks a managedFields fieldsV1 set ({"f:spec":{"f:auth":{...}}}) to path.
func fieldsAt(fs map[string]any, path []string) map[string]any {
	cur := fs
	for _, seg := range path {
		next, _ := cur["f:"+seg].(map[string]any)
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

// Exists reports whether the object apiVersion/kind name exists in namespace ns.
func (k *Kube) Exists(ctx context.Context, apiVersion, kind, ns, name string) (bool, error) {
	obj, err := k.Lookup(ctx, apiVersion, kind, ns, name)
	return obj != nil, err
}

// Lookup returns the object, or nil when it does not exist.
func (k *Kube) Lookup(ctx context.Context, apiVersion, kind, ns, name string) (map[string]any, error) {
	ri, _, err := k.resource(map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}, ns)
	if err != nil {
		return nil, err
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return u.Object, nil
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, fmt.Errorf("look up %s %s/%s: %w", kind, ns, name, err)
}

// ApplyFixtures creates the target's fixtures in namespace ns and waits, for
// up to FixtureSettle, until those that report a Ready condition report it
// True: a CR declared against a fixture that is not ready yet (a CA Issuer
// whose CA Certificate is still being issued) is judged against a state the
// fixture had not reached (cert-manager seed 3: differential re-runs whose
// Certificate waited on its Issuer were compared with a Ready main run).
func (k *Kube) ApplyFixtures(ctx context.Context, files []string, ns string) error {
	var applied []map[string]any
	for _, f := range files {
		objs, err := targets.Render(targets.DeployStep{Manifests: f, Namespace: ns})
		if err != nil {
			return fmt.Errorf("fixture %s: %w", f, err)
		}
		for _, o := range objs {
			md, _ := o["metadata"].(map[string]any)
			if md != nil {
				md["namespace"] = ns
			}
			if err := k.ApplyThroughWebhook(ctx, FixtureSettle, o, ns); err != nil {
				return fmt.Errorf("fixture %s: %w", f, err)
			}
			applied = append(applied, o)
		}
	}
	start := time.Now()
	var waiting []string
	err := Poll(ctx, FixtureSettle, func() (bool, error) {
		waiting = waiting[:0]
		for _, o := range applied {
			u := &unstructured.Unstructured{Object: o}
			live, err := k.Lookup(ctx, u.GetAPIVersion(), u.GetKind(), ns, u.GetName())
			if err != nil || live == nil {
				continue
			}
			if pending, why := fixturePending(live, time.Since(start)); pending {
				waiting = append(waiting, fmt.Sprintf("%s %s: %s", u.GetKind(), u.GetName(), why))
			}
		}
		return len(waiting) == 0, nil
	})
	if err != nil && ctx.Err() == nil {
		k.log.Warn("fixtures not ready; the campaign goes on", "namespace", ns, "waiting", strings.Join(waiting, "; "))
		return nil
	}
	return ctx.Err()
}

// fixtureConditionGrace is how long a fixture of a custom kind may go without
// any status condition before it counts as one that publishes none.
const fixtureConditionGrace = 15 * time.Second

// fixturePending says whether a fixture is not ready yet: it reports a Ready
// condition that is not True, or it is a custom resource that has reported no
// condition yet, for less than fixtureConditionGrace since it was applied.
func fixturePending(live map[string]any, age time.Duration) (bool, string) {
	conds, _ := jsonv.At(live, "status", "conditions").([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		if m["status"] == "True" {
			return false, ""
		}
		reason, _ := m["reason"].(string)
		return true, fmt.Sprintf("Ready=%v (%s)", m["status"], reason)
	}
	av, _ := live["apiVersion"].(string)
	custom := strings.Contains(av, ".") && !strings.HasSuffix(strings.SplitN(av, "/", 2)[0], ".k8s.io")
	if custom && len(conds) == 0 && age < fixtureConditionGrace {
		return true, "no status condition yet"
	}
	return false, ""
}

// Remove deletes obj and waits until it is gone.
func (k *Kube) Remove(ctx context.Context, obj map[string]any, defaultNS string, timeout time.Duration) error {
	ri, _, err := k.resource(obj, defaultNS)
	if err != nil {
		return err
	}
	name := (&unstructured.Unstructured{Object: obj}).GetName()
	fg := metav1.DeletePropagationForeground
	if err := ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return Poll(ctx, timeout, func() (bool, error) {
		_, err := ri.Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// watchedResource is one namespaced resource type a namespace watch follows.
type watchedResource struct {
	gvr  schema.GroupVersionResource
	kind string
}

// skippedResources change on their own or are not state: events (recorded
// separately), leases (heartbeats), and access reviews.
var skippedResources = map[string]bool{
	"events": true, "leases": true, "localsubjectaccessreviews": true, "bindings": true,
	"tokenreviews": true, "selfsubjectreviews": true,
}

// skippedGroups are API groups whose objects are the harness's own doing, not the
// operator's state: Chaos Mesh's (the faults on kind: the NetworkChaos and PodChaos the
// fault back end creates, the PodNetworkChaos Chaos Mesh keeps per target pod). In a
// snapshot they made a rollback look incomplete ("PodNetworkChaos cache-2 is missing from
// the state reached"), and their updates kept resetting quiet windows.
var skippedGroups = map[string]bool{"chaos-mesh.org": true}

// watched reports whether resource r of gv belongs in snapshots and quiet windows.
func watched(gv schema.GroupVersion, r metav1.APIResource) bool {
	return !strings.Contains(r.Name, "/") && !skippedResources[r.Name] && !skippedGroups[gv.Group] && hasVerbs(r.Verbs, "list", "watch")
}

// namespacedResources lists every namespaced resource type that can be listed and watched.
func (k *Kube) namespacedResources() ([]watchedResource, error) {
	k.disc.Invalidate()
	lists, err := k.disc.ServerPreferredNamespacedResources()
	if err != nil && len(lists) == 0 {
		return nil, fmt.Errorf("discover namespaced resources: %w", err)
	}
	var out []watchedResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !watched(gv, r) {
				continue
			}
			out = append(out, watchedResource{gvr: gv.WithResource(r.Name), kind: r.Kind})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvr.String() < out[j].gvr.String() })
	return out, nil
}

func hasVerbs(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			if h == w {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Watch follows every object of a namespace with informers: each change
// touches the quiet tracker, and the caches serve snapshots.
type Watch struct {
	ns     string
	q      *QuietTracker
	cancel context.CancelFunc
	mu     sync.Mutex
	infs   map[watchedResource]cache.SharedIndexInformer
	// certs adds the decoded view of certificates and keys to Secrets and
	// ConfigMaps (x509view.Field), remembering what it decoded.
	certs x509view.Decoder
}

// WatchNamespace starts watching every listable namespaced resource of ns;
// Close stops it.
func (k *Kube) WatchNamespace(ctx context.Context, ns string) (*Watch, error) {
	res, err := k.namespacedResources()
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watch{ns: ns, q: NewQuietTracker(time.Now()), cancel: cancel, infs: map[watchedResource]cache.SharedIndexInformer{}}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(k.dyn, 0, ns, nil)
	touch := func(any) { w.q.Touch(time.Now()) }
	for _, r := range res {
		inf := f.ForResource(r.gvr).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    touch,
			UpdateFunc: func(_, _ any) { w.q.Touch(time.Now()) },
			DeleteFunc: touch,
		}); err != nil {
			cancel()
			return nil, fmt.Errorf("watch %s: %w", r.gvr, err)
		}
		w.infs[r] = inf
	}
	f.Start(wctx.Done())
	syncCtx, syncCancel := context.WithTimeout(wctx, time.Minute)
	defer syncCancel()
	for r, inf := range w.infs {
		if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
			cancel()
			return nil, fmt.Errorf("watch namespace %s: %s did not sync within a minute", ns, r.gvr)
		}
	}
	return w, nil
}

// Objects returns a copy of every cached object (managedFields dropped), keyed
// by ObjectKey. Secrets and ConfigMaps holding PEM certificates or keys carry
// their decoded view in the synthetic field x509view.Field, derived here from
// the raw data before any mask applies.
func (w *Watch) Objects() map[string]model.Object {
	out := map[string]model.Object{}
	for r, inf := range w.infs {
		for _, it := range inf.GetStore().List() {
			u, ok := it.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			o := u.DeepCopy().Object
			if md, ok := o["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
			if r.gvr.Group == "" {
				w.certs.AddView(r.kind, o)
			}
			out[KeyOf(o, r.gvr.Group, r.gvr.Version, r.kind)] = o
		}
	}
	return out
}

// Close stops the watch.
func (w *Watch) Close() { w.cancel() }

// Quiet is the tracker every change of the namespace touches (WaitConverged
// reads it; the harness touches it for its own actions).
func (w *Watch) Quiet() *QuietTracker { return w.q }

// Namespace is the watched namespace.
func (w *Watch) Namespace() string { return w.ns }

// KeyOf is the model.ObjectKey string of object o of the given kind.
func KeyOf(o map[string]any, group, version, kind string) string {
	u := unstructured.Unstructured{Object: o}
	return model.ObjectKey{Group: group, Version: version, Kind: kind, Namespace: u.GetNamespace(), Name: u.GetName()}.String()
}

// Events returns the namespace's events last seen at or after since.
func (k *Kube) Events(ctx context.Context, ns string, since time.Time) []model.Event {
	list, err := k.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []model.Event
	for _, e := range list.Items {
		t := e.LastTimestamp.Time
		if t.IsZero() {
			t = e.EventTime.Time
		}
		if t.IsZero() {
			t = e.CreationTimestamp.Time
		}
		if t.Before(since.Add(-time.Second)) {
			continue
		}
		io := e.InvolvedObject
		gv, _ := schema.ParseGroupVersion(io.APIVersion)
		out = append(out, model.Event{
			Time: t, Type: e.Type, Reason: e.Reason, Message: e.Message, Count: e.Count,
			Object: model.ObjectKey{Group: gv.Group, Version: gv.Version, Kind: io.Kind, Namespace: io.Namespace, Name: io.Name}.String(),
		})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// CreateNamespace creates ns (labelled as the harness's) unless it exists.
func (k *Kube) CreateNamespace(ctx context.Context, ns string) error {
	_, err := k.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"gauntlet.dev/campaign": "true"}}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}

// DeleteNamespace deletes ns without waiting for it to be gone.
func (k *Kube) DeleteNamespace(ctx context.Context, ns string) {
	if err := k.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		k.log.Warn("delete namespace", "namespace", ns, "err", err)
	}
}

// Poll checks cond every 200 ms until it holds, fails or timeout passes.
func Poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) && ctx.Err() == nil {
		return fmt.Errorf("%s: %w", fmt.Sprintf("not met within %s", timeout), err)
	}
	return err
}

// Retry retries fn until it succeeds or timeout (the API may still be learning new CRDs).
func Retry(ctx context.Context, timeout time.Duration, fn func() error) error {
	var last error
	err := Poll(ctx, timeout, func() (bool, error) {
		last = fn()
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// RecreateTimeout bounds the deletion of a custom resource re-created by Declare.
const RecreateTimeout = 2 * time.Minute

// Declare declares the desired state obj in namespace ns: with recreate, the
// object is deleted first (and waited for), for a change the API server
// refuses as an update (a CEL transition rule, an immutable field); then it is
// applied (Apply: the emptied-map merge patch, then server-side apply), again
// while an admission webhook cannot be called, for up to WebhookSettle (the
// operator's own webhook restarting after a lost lease or a fault).
func (k *Kube) Declare(ctx context.Context, obj map[string]any, ns string, recreate bool) error {
	if recreate {
		if err := k.Remove(ctx, obj, ns, RecreateTimeout); err != nil {
			return fmt.Errorf("delete the custom resource before re-creating it: %w", err)
		}
	}
	return k.ApplyThroughWebhook(ctx, WebhookSettle, obj, ns)
}

// OperatorPods lists the operator's pods that are not being deleted, sorted
// (SetOperator says where they are).
func (k *Kube) OperatorPods(ctx context.Context) ([]string, error) {
	if k.opNS == "" || len(k.opLabels) == 0 {
		return nil, fmt.Errorf("no operator pods to target: the target names no operator namespace and labels")
	}
	list, err := k.cs.CoreV1().Pods(k.opNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(k.opLabels).String()})
	if err != nil {
		return nil, fmt.Errorf("list operator pods: %w", err)
	}
	var out []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no running operator pod in %s", k.opNS)
	}
	sort.Strings(out)
	return out, nil
}
